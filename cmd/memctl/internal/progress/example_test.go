package progress_test

import (
	"fmt"
	"os"
	"time"

	"github.com/stratamem/strata/cmd/memctl/internal/progress"
)

func Example() {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return t }
	b := progress.New(os.Stdout, "reindex", 200, false, progress.Options{Unit: "records", Width: 10, Now: clock})
	t = t.Add(2 * time.Second)
	b.Add(50)
	fmt.Println(b.Line())
	// Output:
	// reindex [==>       ] 50 records/200 records  25% ETA 6s 25 records/s
}
