package uselite

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path"
)

// tfjsGraph is the part of a TF.js graph-model model.json this package reads.
type tfjsGraph struct {
	ModelTopology struct {
		Node []graphNode `json:"node"`
	} `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string          `json:"name"`
			Shape        []int           `json:"shape"`
			Dtype        string          `json:"dtype"`
			Quantization json.RawMessage `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

type graphNode struct {
	Name  string   `json:"name"`
	Op    string   `json:"op"`
	Input []string `json:"input"`
}

// tensor is one named constant of the graph: float32 or int32.
type tensor struct {
	shape []int
	f32   []float32
	i32   []int32
}

func (t *tensor) size() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// parseGraph decodes model.json and the weight shards it names (read from
// files by base name) into nodes and named tensors.
func parseGraph(modelJSON []byte, files map[string][]byte) (map[string]graphNode, map[string]*tensor, error) {
	var g tfjsGraph
	if err := json.Unmarshal(modelJSON, &g); err != nil {
		return nil, nil, fmt.Errorf("%w: model.json: %w", ErrUnsupportedModel, err)
	}
	nodes := make(map[string]graphNode, len(g.ModelTopology.Node))
	for _, n := range g.ModelTopology.Node {
		nodes[n.Name] = n
	}
	tensors := make(map[string]*tensor)
	for gi, group := range g.WeightsManifest {
		var size int
		for _, p := range group.Paths {
			b, ok := files[path.Base(p)]
			if !ok {
				return nil, nil, fmt.Errorf("%w: weight group %d names unknown shard %q", ErrUnsupportedModel, gi, p)
			}
			size += len(b)
		}
		data := make([]byte, 0, size)
		for _, p := range group.Paths {
			data = append(data, files[path.Base(p)]...)
		}
		off := 0
		for _, w := range group.Weights {
			if len(w.Quantization) > 0 && string(w.Quantization) != "null" {
				return nil, nil, fmt.Errorf("%w: weight %s is quantized", ErrUnsupportedModel, w.Name)
			}
			t := &tensor{shape: w.Shape}
			n := t.size()
			if n < 0 || off+4*n > len(data) {
				return nil, nil, fmt.Errorf("%w: weight %s overruns its shards", ErrUnsupportedModel, w.Name)
			}
			raw := data[off : off+4*n]
			off += 4 * n
			switch w.Dtype {
			case "float32":
				t.f32 = make([]float32, n)
				for i := range t.f32 {
					t.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				}
			case "int32":
				t.i32 = make([]int32, n)
				for i := range t.i32 {
					t.i32[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
				}
			default:
				return nil, nil, fmt.Errorf("%w: weight %s has dtype %s", ErrUnsupportedModel, w.Name, w.Dtype)
			}
			tensors[w.Name] = t
		}
		if off != len(data) {
			return nil, nil, fmt.Errorf("%w: weight group %d: manifest covers %d of %d bytes", ErrUnsupportedModel, gi, off, len(data))
		}
	}
	return nodes, tensors, nil
}
