package filesystem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
)

// recall renders the tracked files that fit the budget, in path order.
func (l *layer) recall(ctx context.Context, p core.RecallParams[State]) (core.Recall[State], error) {
	if len(p.State.Files) == 0 {
		return core.Recall[State]{}, nil
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return core.Recall[State]{}, fmt.Errorf("filesystem: open root: %w", err)
	}
	defer root.Close()
	type candidate struct {
		path   string
		seq    int64
		prio   int
		block  string
		tokens int
	}
	cands := make([]candidate, 0, len(p.State.Files))
	for _, f := range p.State.Files {
		if err := ctx.Err(); err != nil {
			return core.Recall[State]{}, err
		}
		block, tokens, ok := l.block(ctx, root, f.Path)
		if !ok {
			continue
		}
		cands = append(cands, candidate{path: f.Path, seq: f.Seq, prio: l.priority(f.Path), block: block, tokens: tokens})
	}
	// Score: priority, then recency, then path for a total order.
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.prio != b.prio:
			return b.prio - a.prio
		case a.seq != b.seq:
			if a.seq > b.seq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.path, b.path)
	})
	chosen := cands[:0:0]
	used := 0
	for _, c := range cands {
		cost := c.tokens + core.ItemOverhead
		if cost > p.Budget-used {
			continue // a smaller, lower-scored file may still fit
		}
		used += cost
		chosen = append(chosen, c)
	}
	// Render in path order: see the package doc.
	slices.SortFunc(chosen, func(a, b candidate) int { return strings.Compare(a.path, b.path) })
	items := make([]core.Item, len(chosen))
	for i, c := range chosen {
		items[i] = core.DeveloperMessage(c.block)
	}
	return core.Recall[State]{Items: items}, nil
}

// block returns the rendered block of one file and its token count, from
// the cache when the file is unchanged (see fileID). ok is false when the
// file cannot be shown (gone, not regular, unreadable).
func (l *layer) block(ctx context.Context, root *os.Root, path string) (string, int, bool) {
	name := filepath.FromSlash(path)
	info, err := root.Stat(name)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.log.LogAttrs(ctx, slog.LevelWarn, "filesystem: tracked file not shown", slog.String("layer", l.id),
				slog.String("path", path), slog.String("reason", err.Error()))
		}
		return "", 0, false
	}
	if !info.Mode().IsRegular() {
		return "", 0, false
	}
	if block, tokens, ok := l.cache.get(path, idOf(info)); ok {
		return block, tokens, true
	}
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "filesystem: tracked file not shown", slog.String("layer", l.id),
			slog.String("path", path), slog.String("reason", err.Error()))
		return "", 0, false
	}
	defer f.Close()
	// Cache under the opened file's own metadata: a change racing this
	// read shows up as a newer ctime on the next stat and is read again.
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", 0, false
	}
	data, truncated, err := l.read(f)
	if err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "filesystem: tracked file not shown", slog.String("layer", l.id),
			slog.String("path", path), slog.String("reason", err.Error()))
		return "", 0, false
	}
	block := RenderFile(path, data, truncated, fi.Size())
	tokens := l.tk.Count(block)
	if id := idOf(fi); id.settled(l.now()) {
		l.cache.put(path, id, block, tokens)
	}
	return block, tokens, true
}

// RenderFile renders one file's block: a "## path" heading and the content
// in a fence longer than any backtick run inside it. data is the content
// read (cut at MaxFileBytes when truncated) and size the file's full size.
func RenderFile(path string, data []byte, truncated bool, size int64) string {
	var b strings.Builder
	b.WriteString("## ")
	b.WriteString(path)
	b.WriteByte('\n')
	if truncated {
		// Cut on a rune boundary: a split character is not binary.
		for k := 0; k < utf8.UTFMax-1 && len(data) > 0 && !utf8.Valid(data); k++ {
			data = data[:len(data)-1]
		}
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		fmt.Fprintf(&b, "[binary file, %d bytes: not shown]", size)
		return b.String()
	}
	if len(data) == 0 && !truncated {
		b.WriteString("(empty file)")
		return b.String()
	}
	fence := strings.Repeat("`", max(3, longestRun(data, '`')+1))
	b.WriteString(fence)
	b.WriteByte('\n')
	b.Write(data)
	if !bytes.HasSuffix(data, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString(fence)
	if truncated {
		fmt.Fprintf(&b, "\n[truncated: showing the first %d of %d bytes]", len(data), size)
	}
	return b.String()
}

func longestRun(data []byte, c byte) int {
	best, run := 0, 0
	for _, x := range data {
		if x == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// removedText is what a context update says of a file that left the
// context.
const removedText = "(no longer in context: disregard the earlier copy of this file)"

// Delta is the layer's renderDelta: it compares the "## path" blocks of
// the pinned (prev) and fresh (next) renderings and returns the blocks of
// the files that changed or appeared, and a removal line for each file
// that left, in path order. ok is false when nothing differs or the items
// are not this layer's blocks; the runtime then republishes next whole.
func Delta(prev, next []core.Item) (delta string, ok bool) {
	before, ok1 := sections(prev)
	after, ok2 := sections(next)
	if !ok1 || !ok2 {
		return "", false
	}
	paths := make([]string, 0, len(before)+len(after))
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, seen := before[p]; !seen {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var parts []string
	for _, p := range paths {
		was, had := before[p]
		now, has := after[p]
		switch {
		case has && (!had || was != now):
			parts = append(parts, now)
		case had && !has:
			parts = append(parts, "## "+p+"\n"+removedText)
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "\n\n"), true
}

// sections maps each block's path to its text. Every item is one block
// whose first line is the "## path" heading, so content lines that start
// with "## " (markdown) cannot split a block.
func sections(items []core.Item) (map[string]string, bool) {
	out := make(map[string]string, len(items))
	for _, it := range items {
		text := it.Text()
		heading, _, _ := strings.Cut(text, "\n")
		path, ok := strings.CutPrefix(heading, "## ")
		if !ok || path == "" {
			return nil, false
		}
		out[path] = text
	}
	return out, true
}

// Mentions returns the paths a text mentions as "#path": a '#' at the
// start or after white space or an opening bracket or quote, followed by
// non-space characters; trailing punctuation is not part of the path.
// "# heading" and "##" are not mentions.
func Mentions(text string) []string {
	var out []string
	prev := ' '
	for i, r := range text {
		if r == '#' && (unicode.IsSpace(prev) || strings.ContainsRune("([{\"'`<", prev)) {
			end := i + 1
			for end < len(text) {
				c, size := utf8.DecodeRuneInString(text[end:])
				if unicode.IsSpace(c) || c == '#' {
					break
				}
				end += size
			}
			p := strings.TrimRight(text[i+1:end], ".,;:!?)]}>\"'`")
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		prev = r
	}
	return out
}

// fileID is what a cached block is validated by on the next stat.
//
// Size and modification time alone serve stale bytes after a same-size
// rewrite that keeps the mtime (cp -p, rsync -t, tar x, or two writes in
// one clock tick). The status-change time (ctime) cannot be set from user
// space and moves on every write, chmod or utimes, and device and inode
// tell a file replaced by rename from the one cached. Where the platform
// does not report them (fileid_other.go) they stay zero and compare
// equal.
type fileID struct {
	size     int64
	mod      time.Time
	ctime    time.Time
	dev, ino uint64
}

func idOf(fi os.FileInfo) fileID {
	id := fileID{size: fi.Size(), mod: fi.ModTime()}
	sysID(fi, &id)
	return id
}

func (a fileID) same(b fileID) bool {
	return a.size == b.size && a.mod.Equal(b.mod) && a.ctime.Equal(b.ctime) && a.dev == b.dev && a.ino == b.ino
}

// settleTime is how long after its last change a file is cached. A write
// within the same timestamp tick as the read that cached it would leave
// every time unchanged; file systems stamp with a clock as coarse as a
// jiffy (ext4, tmpfs) or 2 s (FAT), so a file changed in the last 2 s is
// read again on every recall instead.
const settleTime = 2 * time.Second

// settled reports whether the file last changed at least settleTime before
// now. A time in the future (clock skew) is never settled.
func (a fileID) settled(now time.Time) bool {
	last := a.mod
	if a.ctime.After(last) {
		last = a.ctime
	}
	return now.Sub(last) >= settleTime
}

// contentCache holds rendered blocks by path, valid while the file's
// fileID is unchanged. It is shared by the sessions of a runtime, so it is
// locked; files are read outside the lock.
type contentCache struct {
	mu   sync.Mutex
	max  int
	tick uint64
	m    map[string]*cacheEntry
}

type cacheEntry struct {
	id     fileID
	block  string
	tokens int
	used   uint64
}

func newContentCache(max int) *contentCache {
	return &contentCache{max: max, m: map[string]*cacheEntry{}}
}

func (c *contentCache) get(path string, id fileID) (string, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	if !ok || !e.id.same(id) {
		return "", 0, false
	}
	c.tick++
	e.used = c.tick
	return e.block, e.tokens, true
}

func (c *contentCache) put(path string, id fileID, block string, tokens int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	c.m[path] = &cacheEntry{id: id, block: block, tokens: tokens, used: c.tick}
	if len(c.m) <= c.max {
		return
	}
	// Evict the least recently used entry.
	oldest, at := "", uint64(0)
	for p, e := range c.m {
		if oldest == "" || e.used < at {
			oldest, at = p, e.used
		}
	}
	delete(c.m, oldest)
}
