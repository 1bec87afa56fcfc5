package main

import (
	"fmt"
	"strings"
)

// txnProducerTable shows the exactly-once pipe on sarama's transactional AsyncProducer against
// the same pipe on the agent's producer (issue 28, item 4): both on the same broker and input,
// in the same rounds, so each round's ratio compares runs that met the same phase of the machine.
func (rep *report) txnProducerTable() string {
	ours, okOurs := rep.result("eos-pipe-kafkaio")
	var b strings.Builder
	b.WriteString("| exactly-once pipe | records/s | CPU s per M records | records/s / the agent's producer's (median of rounds) | CPU per record / the agent's producer's (median of rounds) |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, name := range []string{"eos-pipe-kafkaio", "eos-pipe-sarama"} {
		r, ok := rep.result(name)
		if !ok {
			fmt.Fprintf(&b, "| %s | not measured (scenario not run or failed) | | | |\n", scenarioLabels[name])
			continue
		}
		ratio, cpuRatio := "n/a (the agent's producer not measured)", "n/a"
		if okOurs {
			ratio = fmtSpread(roundRatio(r, ours, rep.opts.records), "%.2f×")
			cpuRatio = fmtSpread(roundCPURatio(r, ours), "%.2f×")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", scenarioLabels[name],
			fmtSpread(r.recordsPerSec(rep.opts.records), "%s"), fmtSpread(rep.cpuPerMOf(r), "%.2f"), ratio, cpuRatio)
	}
	return b.String()
}

// roundCPURatio compares a's CPU time with b's round by round; both read the same records.
func roundCPURatio(a, b scenarioResult) spread {
	var v []float64
	for i := range min(len(a.runs), len(b.runs)) {
		if cpu := b.runs[i].stats.CPUSeconds; cpu > 0 {
			v = append(v, a.runs[i].stats.CPUSeconds/cpu)
		}
	}
	return spreadOf(v)
}
