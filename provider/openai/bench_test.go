package openai

import (
	"testing"

	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/internal/providertest"
)

func BenchmarkParams(b *testing.B) {
	v := providertest.BenchView(b)
	for _, api := range []API{Responses, ChatCompletions} {
		m, err := New(Options{Model: "gpt-5-mini", APIKey: "k", API: api, ExplicitBreakpoints: true})
		if err != nil {
			b.Fatal(err)
		}
		req := provider.Request{View: v, ThreadID: "t"}
		b.Run(api.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if api == Responses {
					_, err = m.responsesParams(req, 1024)
				} else {
					_, _, err = m.chatParams(req, 1024)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
