package reliability_test

import (
	"encoding/json"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// logLine is one line of the main control's JSON log (--log-format json).
type logLine map[string]any

func (l logLine) str(k string) string {
	switch v := l[k].(type) {
	case string:
		return v
	case float64:
		return itoa(uint64(v))
	}
	return ""
}

// parseLog splits a main control's JSON log into lines; lines that are
// not JSON are skipped.
func parseLog(out string) []logLine {
	var lines []logLine
	for _, s := range strings.Split(out, "\n") {
		var l logLine
		if json.Unmarshal([]byte(s), &l) == nil {
			lines = append(lines, l)
		}
	}
	return lines
}

// acceptedResults counts the result_ack accepted=true frames per task in a
// main control's log, written while frame logging (`debug on=true`) was
// on: one per accepted result, whoever the executor.
func acceptedResults(lines []logLine) map[uint64]int {
	n := map[uint64]int{}
	for _, l := range lines {
		if l.str("msg") != "frame" || l.str("dir") != "out" {
			continue
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(l.str("payload"), "\n") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		if fields["type"] == "result_ack" && fields["accepted"] == "true" {
			id, _ := wire.ParseUint(fields["task_id"])
			n[id]++
		}
	}
	return n
}

// refusedResult is a "result refused and dropped" log line.
type refusedResult struct {
	taskID, version uint64
	executor        string
	reason          string
}

func refusedResults(lines []logLine) []refusedResult {
	var out []refusedResult
	for _, l := range lines {
		if l.str("msg") != "result refused and dropped" {
			continue
		}
		id, _ := wire.ParseUint(l.str("task_id"))
		ver, _ := wire.ParseUint(l.str("version"))
		out = append(out, refusedResult{id, ver, l.str("executor"), l.str("reason")})
	}
	return out
}
