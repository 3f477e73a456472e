package main

import (
	"os"
	"strconv"
	"strings"
	"tilecache/internal/bench/benchenv"
)

// machineCPU returns the machine's busy and total CPU time so far (in
// ticks of every core, from /proc/stat's first line): busy is all but idle
// and iowait.
func machineCPU() (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, 0
	}
	for i, f := range fields[1:8] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// stackCPU sums the CPU seconds of pids (each with its descendants).
func stackCPU(pids []int) float64 {
	var s float64
	for _, p := range pids {
		s += benchenv.TreeCPU(p)
	}
	return s
}
