#include "textflag.h"

// func kernel4x16AVX2(k int, a *float32, lda int, panel *float32, c *float32, ldc int)
//
// c[r*ldc+j] = sum over p < k of a[r*lda+p] * panel[p*16+j], r < 4, j < 16.
// Eight YMM accumulators (4 rows x 2 halves of 8 columns) stay in registers
// for the whole k loop; each step loads one 16-float panel row, broadcasts
// one value per row of a and issues 8 FMAs.
TEXT ·kernel4x16AVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), R10
	MOVQ lda+16(FP), R8
	MOVQ panel+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ    store

loop:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (R10), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R11), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R12), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R13), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $64, DI
	ADDQ         $4, R10
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $4, R13
	DECQ         CX
	JNZ          loop

store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	VZEROUPPER
	RET

// func axpyAVX2(y *float32, alpha float32, x *float32, n int)
//
// y[i] += alpha*x[i]; n must be a positive multiple of 16.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	VBROADCASTSS alpha+8(FP), Y0
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	SHRQ         $4, CX

axpyloop:
	VMOVUPS     (DI), Y1
	VMOVUPS     32(DI), Y2
	VFMADD231PS (SI), Y0, Y1
	VFMADD231PS 32(SI), Y0, Y2
	VMOVUPS     Y1, (DI)
	VMOVUPS     Y2, 32(DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         axpyloop
	VZEROUPPER
	RET
