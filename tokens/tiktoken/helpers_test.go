package tiktoken

import (
	"os"
	"os/exec"
	"testing"
)

// testCommand re-runs this test binary restricted to the tests matching run.
func testCommand(t *testing.T, run string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, "-test.run="+run, "-test.v", "-test.count=1")
}
