package uselite

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/stratamem/strata/embed"
)

// maxRowsPerPass bounds how many tokens one forward pass stacks together.
// Stacking sentences lets every weight matrix be read once for many rows
// (the point of batching); the bound keeps the scratch buffers near 10 MiB.
const maxRowsPerPass = 512

// Model is Universal Sentence Encoder Lite run in pure Go. It implements
// embed.Embedder with 512-dimensional, L2-normalised vectors. Load it once
// and share it: it is safe for concurrent use, each call taking its own
// scratch buffers from a pool.
type Model struct {
	dir  string
	tok  *Tokenizer
	w    *weights
	pool sync.Pool // *scratch
}

var _ embed.Embedder = (*Model)(nil)

// Default loads the model from DefaultDir. When the files are missing the
// error wraps ErrModelNotFound and ends with InstallHint (set
// STRATA_MODEL_DIR, or install the model from a strata checkout).
func Default() (*Model, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return Load(dir)
}

// Load reads model.json, the weight shards and vocab.json from dir, checks
// each file against its pinned sha256 and the graph against the architecture
// this package implements, and returns the ready model (about 30 MB of
// float32 weights).
func Load(dir string) (*Model, error) {
	files, err := readVerified(dir)
	if err != nil {
		return nil, err
	}
	nodes, tensors, err := parseGraph(files["model.json"], files)
	if err != nil {
		return nil, err
	}
	w, err := readWeights(nodes, tensors)
	if err != nil {
		return nil, err
	}
	if err := w.packAll(); err != nil {
		return nil, err
	}
	tok, err := NewTokenizer(files["vocab.json"])
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > w.vocab {
		return nil, fmt.Errorf("%w: vocab.json has %d pieces, embedding table %d rows", ErrUnsupportedModel, tok.VocabSize(), w.vocab)
	}
	return &Model{dir: dir, tok: tok, w: w}, nil
}

// Dir is the folder the model was loaded from.
func (m *Model) Dir() string { return m.dir }

// Model returns ModelID, "use-lite-en@0.2.0".
func (m *Model) Model() string { return ModelID }

// Dimension returns 512.
func (m *Model) Dimension() int { return m.w.width }

// MaxTokens is how many leading pieces of a text the model reads (128);
// the rest of a longer text does not affect its vector.
func (m *Model) MaxTokens() int { return m.w.maxLen }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *Tokenizer { return m.tok }

// Embed implements embed.Embedder. Texts are tokenised, cut to MaxTokens
// pieces, and run through the network in passes of up to 512 stacked tokens;
// ctx is checked between passes and between layers.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := embed.ValidateTexts(texts); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seqs := make([][]int32, len(texts))
	for i, t := range texts {
		// Only the first maxLen pieces are read, so only they are
		// computed: a long text costs no more than its first few hundred
		// characters.
		ids := m.tok.EncodePrefix(t, m.w.maxLen)
		if len(ids) == 0 {
			return nil, &embed.InputError{Index: i}
		}
		seqs[i] = ids
	}
	d := m.w.width
	backing := make([]float32, len(texts)*d)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = backing[i*d : (i+1)*d : (i+1)*d]
	}
	s := m.getScratch()
	defer m.pool.Put(s)
	for lo := 0; lo < len(seqs); {
		hi, rows := lo, 0
		for hi < len(seqs) && (hi == lo || rows+len(seqs[hi]) <= maxRowsPerPass) {
			rows += len(seqs[hi])
			hi++
		}
		if err := m.forward(ctx, s, seqs[lo:hi], out[lo:hi]); err != nil {
			return nil, err
		}
		lo = hi
	}
	return out, nil
}

// scratch holds the activations of one forward pass.
type scratch struct {
	x, y, h    []float32 // residual stream, its update, layer-norm output
	qkv, ctx   []float32
	ff         []float32
	scores     []float32
	pooled, pr []float32
	pad        []float32 // matmul's zero-padded leftover rows
}

func (m *Model) getScratch() *scratch {
	if s, ok := m.pool.Get().(*scratch); ok {
		return s
	}
	return &scratch{}
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// forward embeds the sequences seqs into out (one row each).
func (m *Model) forward(ctx context.Context, s *scratch, seqs [][]int32, out [][]float32) error {
	w := m.w
	rows := 0
	maxLen := 0
	for _, q := range seqs {
		rows += len(q)
		maxLen = max(maxLen, len(q))
	}
	maxW, maxAtt, maxFFN := w.embDim, 0, 0
	for i := range w.layers {
		l := &w.layers[i]
		maxW = max(maxW, l.in, len(l.outB))
		maxAtt = max(maxAtt, l.att)
		maxFFN = max(maxFFN, l.ffn)
	}
	s.x = grow(s.x, rows*maxW)
	s.y = grow(s.y, rows*maxW)
	s.h = grow(s.h, rows*maxW)
	s.qkv = grow(s.qkv, rows*3*maxAtt)
	s.ctx = grow(s.ctx, rows*maxAtt)
	s.ff = grow(s.ff, rows*maxFFN)
	s.scores = grow(s.scores, maxLen)
	s.pooled = grow(s.pooled, len(seqs)*w.width)
	s.pr = grow(s.pr, len(seqs)*w.width)
	s.pad = grow(s.pad, 4*max(maxW, maxAtt, maxFFN)+4*panelWidth)

	// Layer 0 input: emb + (emb + timing), exactly as the graph adds them.
	e := w.embDim
	half := e / 2
	r := 0
	for _, q := range seqs {
		for pos, id := range q {
			if int(id) < 0 || int(id) >= w.vocab {
				return fmt.Errorf("uselite: token id %d outside embedding table of %d rows", id, w.vocab)
			}
			emb := w.emb[int(id)*e:][:e]
			x := s.x[r*e:][:e]
			for j := 0; j < half; j++ {
				ang := float32(pos) * w.invTimescales[j]
				x[j] = emb[j] + (emb[j] + float32(math.Sin(float64(ang))))
				x[half+j] = emb[half+j] + (emb[half+j] + float32(math.Cos(float64(ang))))
			}
			r++
		}
	}

	for li := range w.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.layer(s, &w.layers[li], seqs, rows)
	}

	// Mean over each sequence's tokens, then tanh(x·W+b), then L2.
	d := w.width
	r = 0
	for si, q := range seqs {
		p := s.pooled[si*d:][:d]
		clear(p)
		for range q {
			xr := s.x[r*d:][:d]
			for j, v := range xr {
				p[j] += v
			}
			r++
		}
		n := float32(len(q))
		for j := range p {
			p[j] /= n
		}
	}
	matmul(s.pr, s.pooled, w.tanhP, w.tanhB, len(seqs), false, s.pad)
	for si := range seqs {
		p := s.pr[si*d:][:d]
		var ss float32
		for j, v := range p {
			t := float32(math.Tanh(float64(v)))
			p[j] = t
			ss += t * t
		}
		inv := float32(1 / math.Sqrt(float64(max(ss, w.l2Eps))))
		o := out[si]
		for j, v := range p {
			o[j] = v * inv
		}
	}
	return nil
}

// layer runs one pre-norm transformer layer over the stacked rows, leaving
// its output in s.x.
func (m *Model) layer(s *scratch, l *layer, seqs [][]int32, rows int) {
	width := len(l.outB)
	layerNorm(s.h, s.x, l.lnScale, l.lnBias, rows, l.in, l.lnEps)
	matmul(s.qkv, s.h, l.qkvP, l.qkvB, rows, false, s.pad)
	m.attention(s, l, seqs)
	// y = attention·Wo + bo, plus the residual (projected when widths differ).
	matmul(s.y, s.ctx, l.outP, l.outB, rows, false, s.pad)
	if l.resB != nil {
		matmul(s.h, s.x, l.resP, l.resB, rows, false, s.pad)
		addInPlace(s.y[:rows*width], s.h[:rows*width])
	} else {
		addInPlace(s.y[:rows*width], s.x[:rows*width])
	}
	layerNorm(s.h, s.y, l.ffnLnScale, l.ffnLnBias, rows, width, l.ffnLnEps)
	matmul(s.ff, s.h, l.ff1P, l.ff1B, rows, true, s.pad)
	matmul(s.x, s.ff, l.ff2P, l.ff2B, rows, false, s.pad)
	addInPlace(s.x[:rows*width], s.y[:rows*width])
}

func addInPlace(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// attention computes multi-head self-attention within each sequence from the
// packed q|k|v rows in s.qkv, writing the heads side by side into s.ctx.
// Tokens of different sequences never attend to each other, which is what the
// graph's -1e9 padding bias amounts to (exp of it is exactly 0 in float32).
func (m *Model) attention(s *scratch, l *layer, seqs [][]int32) {
	att, hd := l.att, l.headDim
	stride := 3 * att
	base := 0
	for _, q := range seqs {
		n := len(q)
		for i := 0; i < n; i++ {
			qr := s.qkv[(base+i)*stride:][:att]
			for j := range qr {
				qr[j] *= l.qScale
			}
		}
		for h := 0; h < l.heads; h++ {
			for i := 0; i < n; i++ {
				qi := s.qkv[(base+i)*stride+h*hd:][:hd]
				sc := s.scores[:n]
				mx := float32(math.Inf(-1))
				for j := 0; j < n; j++ {
					kj := s.qkv[(base+j)*stride+att+h*hd:][:hd]
					v := dot(qi, kj)
					sc[j] = v
					mx = max(mx, v)
				}
				var sum float32
				for j, v := range sc {
					ev := float32(math.Exp(float64(v - mx)))
					sc[j] = ev
					sum += ev
				}
				o := s.ctx[(base+i)*att+h*hd:][:hd]
				clear(o)
				for j, p := range sc {
					vj := s.qkv[(base+j)*stride+2*att+h*hd:][:hd]
					axpy(o, p/sum, vj)
				}
			}
		}
		base += n
	}
}
