package vectorstore

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
)

// asDriver exposes a *string through As.
type asDriver struct {
	*memDriver
	s string
}

func (d *asDriver) As(target any) bool {
	p, ok := target.(*string)
	if ok {
		*p = d.s
	}
	return ok
}

func TestAs(t *testing.T) {
	plain := newTermColl(t, newMem())
	var s string
	if plain.As(&s) || plain.As(nil) {
		t.Fatal("As succeeded on a driver without As")
	}
	c := newTermColl(t, &asDriver{memDriver: newMem(), s: "native"})
	if !c.As(&s) || s != "native" {
		t.Fatalf("As(*string) = %q", s)
	}
	var n int
	var d driver.Collection
	if c.As(&n) || c.As(&d) || c.As(nil) {
		t.Fatal("As accepted a type the driver does not support")
	}
}

func TestDriverConfig(t *testing.T) {
	if got := DriverConfig("n", nil); got.Name != "n" || got.Dimension != 0 || got.Distance != "" || got.MetadataKeys != nil {
		t.Fatalf("nil options: %+v", got)
	}
	got := DriverConfig("n", &Options{Dimension: 3, Distance: "l2", MetadataKeys: []string{"a"}})
	if got.Name != "n" || got.Dimension != 3 || got.Distance != "l2" || len(got.MetadataKeys) != 1 {
		t.Fatalf("options not carried over: %+v", got)
	}
}

// An opener configured with options, served by a mux of the caller's.
type fixedOpener struct {
	cfgs []driver.Config
}

func (o *fixedOpener) OpenCollectionURL(_ context.Context, u *url.URL, cfg driver.Config) (driver.Collection, error) {
	if u.RawQuery != "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "open", "url", "unexpected %q", u.RawQuery)
	}
	o.cfgs = append(o.cfgs, cfg)
	return newMem(), nil
}

func TestURLMux(t *testing.T) {
	var mux URLMux
	op := &fixedOpener{}
	mux.Register("Mine", op)
	mux.Register("func", OpenFunc(func(context.Context, *url.URL, driver.Config) (driver.Collection, error) {
		return nil, errors.New("func opener")
	}))
	if got := mux.Schemes(); len(got) != 2 || got[0] != "func" || got[1] != "mine" {
		t.Fatalf("schemes %v", got)
	}
	c, err := mux.Open(tctx, "mine://x?collection=c&dimension=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(op.cfgs) != 1 || op.cfgs[0].Name != "c" || op.cfgs[0].Dimension != 2 {
		t.Fatalf("opener got %+v", op.cfgs)
	}
	if _, err := mux.Open(tctx, "func://x", nil); err == nil || !strings.Contains(err.Error(), "func opener") {
		t.Fatalf("func opener: %v", err)
	}
	// The default mux's schemes are not the caller's mux's.
	_, err = mux.Open(tctx, "capture://x", nil)
	if CodeOf(err) != CodeUnsupportedScheme || !strings.Contains(err.Error(), "registered: func, mine;") {
		t.Fatalf("unknown scheme: %v", err)
	}
	for _, f := range []func(){
		func() { mux.Register("mine", op) },
		func() { mux.Register("", op) },
		func() { mux.Register("x", nil) },
		func() { mux.Register("y", OpenFunc(nil)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			f()
		}()
	}
}
