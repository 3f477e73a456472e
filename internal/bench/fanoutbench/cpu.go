package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux for
// every architecture Go supports).
const clockTick = 100

// treeCPU returns the CPU seconds of process pid and its descendants
// (pid 0: none), from /proc.
func treeCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks float64
	if len(fields) > 12 {
		u, _ := strconv.ParseFloat(fields[11], 64)
		st, _ := strconv.ParseFloat(fields[12], 64)
		ticks = u + st
	}
	total := ticks / clockTick
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(t)
		for _, k := range strings.Fields(string(kids)) {
			if c, err := strconv.Atoi(k); err == nil {
				total += treeCPU(c)
			}
		}
	}
	return total
}

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
		s += treeCPU(p)
	}
	return s
}
