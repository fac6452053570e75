#include "textflag.h"

// func dotAVX2(a, b *float32, n int) float32
//
// n must be a positive multiple of 16. Two accumulators of 8 lanes (the
// first for elements 16i..16i+7, the second for 16i+8..16i+15), added, then
// reduced pairwise: the order depends on n only.
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

dotloop:
	VMOVUPS     (SI), Y2
	VMOVUPS     32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         dotloop

	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func sqDistAVX2(a, b *float32, n int) float32
//
// n must be a positive multiple of 16. dotAVX2's order of operations on the
// differences a[i]-b[i].
TEXT ·sqDistAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

sqloop:
	VMOVUPS     (SI), Y2
	VMOVUPS     32(SI), Y3
	VSUBPS      (DI), Y2, Y2
	VSUBPS      32(DI), Y3, Y3
	VFMADD231PS Y2, Y2, Y0
	VFMADD231PS Y3, Y3, Y1
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         sqloop

	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotInt8AVX2(q *float32, c *int8, n int) float32
//
// n must be a positive multiple of 32. Four accumulators of 8 lanes (the
// j-th for elements 32i+8j..32i+8j+7), each code sign-extended and
// converted to float32 (exactly), then fused-multiply-added; the
// accumulators are added pairwise ((0+1)+(2+3)) and reduced as in dotAVX2.
// (Eight accumulators measured no faster: the conversions, not the FMA
// latency, bound it.)
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ   q+0(FP), SI
	MOVQ   c+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $5, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

i8loop:
	VPMOVSXBD   (DI), Y4
	VPMOVSXBD   8(DI), Y5
	VPMOVSXBD   16(DI), Y6
	VPMOVSXBD   24(DI), Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         i8loop

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotInt8RowsAVX2(q *float32, c *int8, n int, out *float32, rows int)
//
// dotInt8AVX2 for each of rows consecutive rows of n codes: the same
// operations in the same order, so the same bits.
TEXT ·dotInt8RowsAVX2(SB), NOSPLIT, $0-40
	MOVQ c+8(FP), DI
	MOVQ n+16(FP), R8
	MOVQ out+24(FP), DX
	MOVQ rows+32(FP), R9
	SHRQ $5, R8

rowloop:
	MOVQ   q+0(FP), SI
	MOVQ   R8, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

rowi8loop:
	VPMOVSXBD   (DI), Y4
	VPMOVSXBD   8(DI), Y5
	VPMOVSXBD   16(DI), Y6
	VPMOVSXBD   24(DI), Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         rowi8loop

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	DECQ         R9
	JNZ          rowloop
	VZEROUPPER
	RET
