package wire

import "slices"

// Feature names an optional group of v1.1 messages, listed in
// welcome's features=<list> (protocol section 8.1).
type Feature = string

// The groups of protocol section 8.1. A peer ignores names it does not
// know. So a server may list groups newer than its peer.
const (
	FeatureAdmin Feature = "admin" // requeue, bulk cancel and purge, pause, state repair
	FeatureTypes Feature = "types" // type_list and the executor's types
	// FeatureSchedules: durable cron schedules (section 8.12).
	FeatureSchedules Feature = "schedules"
	FeatureRuns      Feature = "runs" // run objects: submit, query, list, cancel, resume
	// FeatureCluster: a member of a replicated cluster (section 8.13).
	FeatureCluster Feature = "cluster"
)

// HasFeature reports whether a welcome's features list names f.
func (w Welcome) HasFeature(f Feature) bool { return slices.Contains(w.Features, f) }
