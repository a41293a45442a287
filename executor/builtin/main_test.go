package builtin_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/apollo11/apollo11/executor/builtin"
)

// helperEnv, when set, makes the test binary a stand-in executor: it runs
// the exec handler on the arguments after "--" and exits when that
// returns, so that a test can kill an executor that has a program running
// (TestExec_ProgramDiesWithExecutor).
const helperEnv = "APOLLO11_BUILTIN_TEST_EXEC"

func TestMain(m *testing.M) {
	builtin.GuardMain() // as the daemon does: Exec runs programs under a guard
	if os.Getenv(helperEnv) != "" {
		if err := builtin.BecomeSubreaper(); err != nil {
			panic(err)
		}
		args := map[string]string{}
		for i, a := range os.Args[slices.Index(os.Args, "--")+1:] {
			args["argv."+strconv.Itoa(i)] = a
		}
		h := builtin.Exec(builtin.ExecConfig{Enabled: true, Allow: []string{args["argv.0"]}})
		_, _ = h.Handle(context.Background(), task(args))
		return
	}
	os.Exit(m.Run())
}
