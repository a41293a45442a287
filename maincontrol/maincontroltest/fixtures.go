package maincontroltest

// FixtureRun is one pipeline run of a checked-in data dir, as its
// generator left it.
type FixtureRun struct{ Key, State string }

// RunsV2Fixture are the runs of maincontrol/testdata/datadir-runs-v2 by
// id, as `genfixture -layout runs-v2` left them: all in the newest
// manifest's head entries (format 2, before runs had parts), which a
// graceful stop wrote. Run 3 waits on a step type no executor serves.
// The upgrade tests of maincontrol and reliability both check them.
var RunsV2Fixture = map[uint64]FixtureRun{
	1: {"nightly-1", "succeeded"}, 2: {"", "failed"}, 3: {"waits-1", "running"},
	4: {"filler-4", "succeeded"}, 5: {"filler-5", "succeeded"}, 6: {"filler-6", "succeeded"},
	7: {"filler-7", "succeeded"}, 8: {"filler-8", "succeeded"},
}
