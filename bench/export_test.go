package bench

import (
	"strconv"
	"time"
)

// LoopAnswer is one request of an open loop as its lane saw it.
type LoopAnswer struct {
	I       int
	Due     time.Time
	Latency time.Duration
	Status  int
}

// RunOpenLoop runs an open loop of requests POSTs to path on host, request
// i with the token "Bearer <i>", and returns every answer, by request,
// with what the loop counted.
func RunOpenLoop(host, path string, requests, rate, conns int, start, deadline time.Time) (answers map[int]LoopAnswer,
	sent, notSent int, statuses map[int]int) {
	lanes := make([]*recordingLane, conns)
	res := openLoop{host: host, requests: requests, rate: rate, conns: conns, start: start, deadline: deadline}.
		run(func(w int) lane {
			lanes[w] = &recordingLane{path: []byte(path)}
			return lanes[w]
		})
	answers = map[int]LoopAnswer{}
	for _, l := range lanes {
		for _, a := range l.answers {
			answers[a.I] = a
		}
	}
	return answers, res.sent, res.notSent, res.statuses
}

type recordingLane struct {
	path    []byte
	answers []LoopAnswer
}

func (l *recordingLane) target(i int) (path, token []byte) {
	return l.path, []byte("Bearer " + strconv.Itoa(i))
}

func (l *recordingLane) answered(x *exchange) {
	l.answers = append(l.answers, LoopAnswer{I: x.i, Due: x.due, Latency: x.latency(), Status: x.status()})
}

// ComputeRatios fills r.Ratios from its figures, as Run does at its end.
func (r *Report) ComputeRatios() { r.ratios() }
