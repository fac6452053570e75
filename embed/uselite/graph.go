package uselite

import (
	"fmt"
	"strings"
)

// Node-name prefixes of the converted TF-Hub graph.
const (
	pKT  = "module_apply_default/Encoder_en/KonaTransformer/"
	pTS  = pKT + "Encode/TransformerStack/"
	pW   = pKT + "Encode/"
	pK   = "module/Encoder_en/KonaTransformer/Encode/"
	pHid = "module_apply_default/Encoder_en/hidden_layers/"
)

// layer holds one transformer layer. Matrices are row-major [in, out], as
// TF stores them, so y = x·W + b.
type layer struct {
	in, att, heads, headDim int
	qScale                  float32
	lnEps, ffnLnEps         float32

	lnScale, lnBias []float32 // [in]
	qkvW, qkvB      []float32 // [in, 3*att]
	outW, outB      []float32 // [att, width]
	resW, resB      []float32 // [in, width], only when in != width
	ffnLnScale      []float32 // [width]
	ffnLnBias       []float32
	ff1W, ff1B      []float32 // [width, ffn]
	ff2W, ff2B      []float32 // [ffn, width]
	ffn             int

	// The matrices above repacked for matmul (see pack); the row-major
	// copies are dropped once packed.
	qkvP, outP, resP, ff1P, ff2P packed
}

// weights is everything the forward pass needs, read from the graph.
type weights struct {
	vocab, embDim, width, maxLen int
	emb                          []float32 // [vocab, embDim]
	invTimescales                []float32 // [embDim/2]
	layers                       []layer
	tanhW, tanhB                 []float32 // [width, width]
	tanhP                        packed
	l2Eps                        float32
}

// packAll repacks every matrix for matmul and drops the row-major copies.
func (w *weights) packAll() error {
	var bad []string
	do := func(name string, dst *packed, src *[]float32, k, n int) {
		p, ok := pack(*src, k, n)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s (%dx%d)", name, k, n))
			return
		}
		*dst, *src = p, nil
	}
	for i := range w.layers {
		l := &w.layers[i]
		width := len(l.outB)
		do("qkv", &l.qkvP, &l.qkvW, l.in, 3*l.att)
		do("output", &l.outP, &l.outW, l.att, width)
		if l.resW != nil {
			do("residual", &l.resP, &l.resW, l.in, width)
		}
		do("ffn1", &l.ff1P, &l.ff1W, width, l.ffn)
		do("ffn2", &l.ff2P, &l.ff2W, l.ffn, width)
	}
	do("tanh", &w.tanhP, &w.tanhW, w.width, w.width)
	if len(bad) > 0 {
		return fmt.Errorf("%w: matrix widths not a multiple of %d: %s", ErrUnsupportedModel, panelWidth, strings.Join(bad, ", "))
	}
	return nil
}

// graphReader looks up nodes and constants, remembering the first problem so
// the construction code below reads straight through.
type graphReader struct {
	nodes   map[string]graphNode
	tensors map[string]*tensor
	err     error
}

func (g *graphReader) fail(format string, args ...any) {
	if g.err == nil {
		g.err = fmt.Errorf("%w: %s", ErrUnsupportedModel, fmt.Sprintf(format, args...))
	}
}

// expect checks that node name exists with op and, for each non-empty entry
// of inputs, that input i is exactly that node. It returns the node's inputs.
func (g *graphReader) expect(name, op string, inputs ...string) []string {
	n, ok := g.nodes[name]
	if !ok {
		g.fail("graph has no node %s", name)
		return nil
	}
	if n.Op != op {
		g.fail("node %s is %s, want %s", name, n.Op, op)
		return nil
	}
	for i, want := range inputs {
		if want == "" {
			continue
		}
		if i >= len(n.Input) || n.Input[i] != want {
			g.fail("node %s input %d is %v, want %s", name, i, n.Input, want)
			return nil
		}
	}
	return n.Input
}

// input returns the name of input i of node name (which must have op).
func (g *graphReader) input(name, op string, i int) string {
	in := g.expect(name, op)
	if g.err != nil {
		return ""
	}
	if i >= len(in) {
		g.fail("node %s has %d inputs, want > %d", name, len(in), i)
		return ""
	}
	return in[i]
}

func (g *graphReader) f32(name string, shape ...int) []float32 {
	t := g.tensor(name, shape)
	if t == nil || t.f32 == nil {
		g.fail("constant %s is not float32", name)
		return nil
	}
	return t.f32
}

func (g *graphReader) scalarF32(name string) float32 { return scalar(g, name, g.f32(name)) }

func (g *graphReader) i32(name string) []int32 {
	t := g.tensor(name, nil)
	if t == nil || t.i32 == nil {
		g.fail("constant %s is not int32", name)
		return nil
	}
	return t.i32
}

func (g *graphReader) scalarI32(name string) int { return int(scalar(g, name, g.i32(name))) }

// scalar returns the single element of v, the values of constant name (nil
// when reading them failed).
func scalar[T float32 | int32](g *graphReader, name string, v []T) T {
	if len(v) != 1 {
		g.fail("constant %s is not a scalar", name)
		return 0
	}
	return v[0]
}

// tensor returns the named constant; a non-nil shape must match exactly
// (an empty shape, written as no arguments, means a scalar or any shape
// for scalarF32, which checks the size itself).
func (g *graphReader) tensor(name string, shape []int) *tensor {
	if g.err != nil {
		return nil
	}
	t, ok := g.tensors[name]
	if !ok {
		g.fail("graph has no weight %s", name)
		return nil
	}
	if len(shape) > 0 {
		if len(shape) != len(t.shape) {
			g.fail("weight %s has shape %v, want %v", name, t.shape, shape)
			return nil
		}
		for i := range shape {
			if shape[i] != t.shape[i] {
				g.fail("weight %s has shape %v, want %v", name, t.shape, shape)
				return nil
			}
		}
	}
	return t
}

// readWeights checks that the graph is the Universal Sentence Encoder Lite
// network this package implements and reads its weights and hyperparameters.
// The wiring checks pin down each place where a different graph would need a
// different computation; the sizes come from the weight shapes and constants,
// not from assumptions.
func readWeights(nodes map[string]graphNode, tensors map[string]*tensor) (*weights, error) {
	g := &graphReader{nodes: nodes, tensors: tensors}
	known := map[string]bool{}
	for _, op := range strings.Fields(`Const Placeholder StridedSlice Reshape Shape Add Mul ConcatV2
		ExpandDims Pack GatherV2 BiasAdd Mean Transpose Prod Cast MatMul Squeeze ScatterNd Square
		Rsqrt GatherNd Sub Conv2D BatchMatMul Maximum Sum Less Where SplitV Slice Softmax Relu Max
		SparseToDense Greater LogicalNot Sin Cos Range RealDiv Tanh`) {
		known[op] = true
	}
	for _, n := range nodes {
		if !known[n.Op] {
			g.fail("node %s has op %s, which this implementation does not run", n.Name, n.Op)
		}
	}
	w := &weights{}

	// Inputs: sparse (indices [N,2], values [N]) clipped to positions < maxLen.
	g.expect(pKT+"ClipToMaxLength/strided_slice", "StridedSlice", "indices")
	w.maxLen = g.scalarI32(g.input(pKT+"ClipToMaxLength/Less", "Less", 1))
	g.expect(pKT+"ClipToMaxLength/GatherV2_1", "GatherV2", "values")

	// Token embeddings, and the input of layer 0: emb + (emb + timing).
	embName := g.input(pKT+"Encode/embedding_lookup", "GatherV2", 0)
	g.expect(pKT+"Encode/embedding_lookup", "GatherV2", embName, pKT+"ClipToMaxLength/GatherV2_1")
	if t := g.tensor(embName, nil); t != nil && len(t.shape) == 2 {
		w.vocab, w.embDim = t.shape[0], t.shape[1]
		w.emb = g.f32(embName)
	} else {
		g.fail("embedding table %s is not a matrix", embName)
	}
	ts := pTS + "Layer_0/AddTimingSignal/"
	g.expect(ts+"TimingSignal/concat", "ConcatV2", ts+"TimingSignal/Sin", ts+"TimingSignal/Cos")
	g.expect(ts+"TimingSignal/Sin", "Sin", ts+"TimingSignal/mul_2")
	g.expect(ts+"TimingSignal/mul_2", "Mul", ts+"TimingSignal/ExpandDims")
	w.invTimescales = g.f32(g.input(ts+"TimingSignal/mul_2", "Mul", 1), 1, w.embDim/2)
	g.expect(ts+"Gather/GatherNd", "GatherNd", pKT+"Encode/Scatter/ScatterNd")
	g.expect(ts+"add", "Add", ts+"Gather/GatherNd", ts+"TimingSignal/concat")
	g.expect(pTS+"Layer_0/add", "Add", pKT+"Encode/Scatter/ScatterNd", ts+"Scatter/ScatterNd")

	// Transformer layers. Layer i reads the residual stream left by layer i-1.
	residualIn := pTS + "Layer_0/add"
	for li := 0; ; li++ {
		lp := fmt.Sprintf("%sLayer_%d/TransformerLayer/", pTS, li)
		if _, ok := nodes[lp+"layer_postprocess/add"]; !ok {
			break
		}
		l := g.readLayer(li, residualIn)
		if g.err != nil {
			break
		}
		if li == 0 && l.in != w.embDim {
			g.fail("layer 0 reads %d features, embeddings have %d", l.in, w.embDim)
		}
		if li > 0 && l.in != w.width {
			g.fail("layer %d reads %d features, layer %d writes %d", li, l.in, li-1, w.width)
		}
		w.width = len(l.outB)
		w.layers = append(w.layers, l)
		residualIn = lp + "FFN/layer_postprocess/add"
	}
	if g.err == nil && len(w.layers) == 0 {
		g.fail("graph has no transformer layers")
	}

	// Masked mean over the sequence, tanh projection, L2 normalisation.
	g.expect(pKT+"mul", "Mul", residualIn, pKT+"ExpandDims")
	g.expect(pKT+"Sum", "Sum", pKT+"mul")
	g.expect(pKT+"div", "RealDiv", pKT+"Sum", pKT+"ExpandDims_1")
	tw := g.input(pHid+"tanh_layer_0/MatMul", "MatMul", 1)
	g.expect(pHid+"tanh_layer_0/MatMul", "MatMul", pKT+"div")
	w.tanhW = g.f32(tw, w.width, w.width)
	w.tanhB = g.f32(g.input(pHid+"tanh_layer_0/BiasAdd", "BiasAdd", 1), w.width)
	g.expect(pHid+"tanh_layer_0/Tanh", "Tanh", pHid+"tanh_layer_0/BiasAdd")
	g.expect(pHid+"l2_normalize/Square", "Square", pHid+"tanh_layer_0/Tanh")
	w.l2Eps = g.scalarF32(g.input(pHid+"l2_normalize/Maximum", "Maximum", 1))
	g.expect(pHid+"l2_normalize", "Mul", pHid+"tanh_layer_0/Tanh", pHid+"l2_normalize/Rsqrt")

	if g.err == nil && (w.maxLen < 1 || w.embDim%2 != 0 || w.vocab < 1) {
		g.fail("implausible sizes: max length %d, embedding %dx%d", w.maxLen, w.vocab, w.embDim)
	}
	if g.err != nil {
		return nil, g.err
	}
	return w, nil
}

// readLayer reads transformer layer li, whose residual input is node in.
func (g *graphReader) readLayer(li int, in string) layer {
	lp := fmt.Sprintf("%sLayer_%d/TransformerLayer/", pTS, li)
	wp := fmt.Sprintf("%sLayer_%d/TransformerLayer/", pW, li)
	kp := fmt.Sprintf("%sLayer_%d/TransformerLayer/", pK, li)
	mha := lp + "MultiheadAttention/"
	var l layer

	// Pre-norm attention block.
	ln := lp + "layer_prepostprocess/layer_norm/"
	g.expect(ln+"Mean", "Mean", in)
	g.expect(ln+"sub_1", "Sub", in, ln+"Mean")
	l.lnEps = g.scalarF32(g.input(ln+"add", "Add", 1))
	l.lnScale = g.f32(g.input(ln+"mul", "Mul", 0))
	l.lnBias = g.f32(g.input(ln+"add_1", "Add", 1))
	l.in = len(l.lnScale)
	g.expect(mha+"ExpandDims", "ExpandDims", ln+"add_1")
	qkvK := g.input(mha+"qkv_transform_single/Conv2D", "Conv2D", 1)
	g.expect(mha+"qkv_transform_single/Conv2D", "Conv2D", mha+"ExpandDims", kp+"MultiheadAttention/qkv_transform_single/kernel/part_0")
	split := g.i32(g.input(mha+"split", "SplitV", 1))
	if len(split) != 3 || split[0] != split[1] || split[1] != split[2] {
		g.fail("layer %d splits qkv as %v, want three equal parts", li, split)
		return l
	}
	l.att = int(split[0])
	l.qkvW = g.f32(qkvK, 1, 1, l.in, 3*l.att)
	l.qkvB = g.f32(g.input(mha+"qkv_transform_single/BiasAdd", "BiasAdd", 1), 3*l.att)
	shape := g.expect(mha+"split_heads/split_last_dimension/Reshape/shape", "Pack")
	if len(shape) != 4 {
		g.fail("layer %d split_heads shape has %d inputs", li, len(shape))
		return l
	}
	l.heads = g.scalarI32(shape[2])
	l.headDim = g.scalarI32(shape[3])
	if g.err == nil && l.heads*l.headDim != l.att {
		g.fail("layer %d: %d heads of %d != %d", li, l.heads, l.headDim, l.att)
	}
	g.expect(mha+"split_heads/split_last_dimension/Reshape", "Reshape", mha+"split")
	g.expect(mha+"split_heads_1/split_last_dimension/Reshape", "Reshape", mha+"split:1")
	g.expect(mha+"split_heads_2/split_last_dimension/Reshape", "Reshape", mha+"split:2")
	perm := g.i32(g.input(mha+"split_heads/transpose", "Transpose", 1))
	if g.err == nil && (len(perm) != 4 || perm[0] != 0 || perm[1] != 2 || perm[2] != 1 || perm[3] != 3) {
		g.fail("layer %d head transpose %v", li, perm)
	}
	// Queries (first third) are scaled, keys (second) transposed, values third.
	l.qScale = g.scalarF32(g.input(mha+"mul", "Mul", 1))
	g.expect(mha+"mul", "Mul", mha+"split_heads/transpose")
	dpa := mha + "DotProductAttention/BaseDotProductAttention/"
	g.expect(dpa+"MatMul", "BatchMatMul", mha+"mul", mha+"split_heads_1/transpose")
	g.expect(dpa+"Softmax", "Softmax", dpa+"Reshape")
	g.expect(dpa+"MatMul_1", "BatchMatMul", dpa+"attention_weights", mha+"split_heads_2/transpose")
	g.expect(mha+"combine_heads/transpose", "Transpose", dpa+"MatMul_1")
	outK := g.input(mha+"output_transform_single/Conv2D", "Conv2D", 1)
	g.expect(mha+"output_transform_single/Conv2D", "Conv2D", mha+"ExpandDims_1", kp+"MultiheadAttention/output_transform_single/kernel/part_0")
	l.outB = g.f32(g.input(mha+"output_transform_single/BiasAdd", "BiasAdd", 1))
	width := len(l.outB)
	l.outW = g.f32(outK, 1, 1, l.att, width)

	// Residual: the input itself, or a dense projection when widths differ.
	post := g.expect(lp+"layer_postprocess/add", "Add", mha+"Squeeze_1")
	if len(post) == 2 && post[1] != in {
		ar := lp + "AdjustResidualInput/"
		g.expect(lp+"layer_postprocess/add", "Add", mha+"Squeeze_1", ar+"Scatter/ScatterNd")
		g.expect(ar+"Gather/GatherNd", "GatherNd", in)
		g.expect(ar+"dense/MatMul", "MatMul", ar+"Gather/GatherNd", wp+"dense/kernel/ConcatPartitions/concat")
		l.resW = g.f32(wp+"dense/kernel/ConcatPartitions/concat", l.in, width)
		l.resB = g.f32(g.input(ar+"dense/BiasAdd", "BiasAdd", 1), width)
	} else if g.err == nil && l.in != width {
		g.fail("layer %d adds a %d-wide residual to %d-wide attention output", li, l.in, width)
	}

	// Pre-norm feed-forward block with ReLU.
	fln := lp + "FFN/layer_prepostprocess/layer_norm/"
	g.expect(fln+"Mean", "Mean", lp+"layer_postprocess/add")
	l.ffnLnEps = g.scalarF32(g.input(fln+"add", "Add", 1))
	l.ffnLnScale = g.f32(g.input(fln+"mul", "Mul", 0), width)
	l.ffnLnBias = g.f32(g.input(fln+"add_1", "Add", 1), width)
	g.expect(lp+"FFN/Gather/GatherNd", "GatherNd", fln+"add_1")
	c1 := lp + "FFN/conv1/"
	c2 := lp + "FFN/conv2/"
	g.expect(c1+"Tensordot/MatMul", "MatMul", c1+"Tensordot/Reshape", c1+"Tensordot/Reshape_1")
	l.ff1B = g.f32(g.input(c1+"BiasAdd", "BiasAdd", 1))
	l.ffn = len(l.ff1B)
	l.ff1W = g.f32(c1+"Tensordot/Reshape_1", width, l.ffn)
	g.expect(c1+"Relu", "Relu", c1+"BiasAdd")
	g.expect(c2+"Tensordot/Reshape", "Reshape", c1+"Relu")
	g.expect(c2+"Tensordot/MatMul", "MatMul", c2+"Tensordot/Reshape", c2+"Tensordot/Reshape_1")
	l.ff2W = g.f32(c2+"Tensordot/Reshape_1", l.ffn, width)
	l.ff2B = g.f32(g.input(c2+"BiasAdd", "BiasAdd", 1), width)
	g.expect(lp+"FFN/layer_postprocess/add", "Add", lp+"FFN/Scatter/ScatterNd", lp+"layer_postprocess/add")
	if g.err == nil && (len(l.lnBias) != l.in || l.headDim < 1) {
		g.fail("layer %d: inconsistent layer norm or head sizes", li)
	}
	return l
}
