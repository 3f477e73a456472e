package quotatest

import (
	"sync"
	"testing"
	"time"
)

// ScheduleClock is a clock and timer for a quota.Cleaner's schedule
// (Cleaner.SetClock(c.Now, c.After)) that a test moves on: Now is real
// time plus what the test added, and a wait of RunSchedule ends only when
// the test fires it (Fire), never by itself. So the schedule's runs happen
// when the test says, and the test knows when one is over.
type ScheduleClock struct {
	mu     sync.Mutex
	ahead  time.Duration
	fire   chan time.Time // the wait RunSchedule asked for last
	wait   time.Duration  // and how long it was
	called chan struct{}  // closed (and replaced) when RunSchedule asks for a wait
}

// NewScheduleClock returns a clock at real time.
func NewScheduleClock() *ScheduleClock {
	return &ScheduleClock{called: make(chan struct{})}
}

// Now is real time plus what Fire added.
func (c *ScheduleClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

// After is RunSchedule's wait of d: a channel that receives only when
// the test fires it.
func (c *ScheduleClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fire, c.wait = make(chan time.Time), d
	close(c.called)
	c.called = make(chan struct{})
	return c.fire
}

// Fire moves the clock on by ahead and ends the schedule's wait, then
// waits for the schedule to ask for its next one: by then it has called
// RunDue once, starting after the clock moved (whatever it decided to
// do), and decided when to run next. It returns that next wait. A wait the
// schedule gives up for another reason (Rearm) before the test fires it
// is not counted: Fire fires the next one instead.
func (c *ScheduleClock) Fire(t testing.TB, ahead time.Duration) time.Duration {
	t.Helper()
	const limit = 60 * time.Second
	deadline := time.After(limit)
	c.mu.Lock()
	c.ahead += ahead
	for {
		fire, called := c.fire, c.called
		c.mu.Unlock()
		if fire == nil {
			select { // RunSchedule has not waited yet
			case <-called:
			case <-deadline:
				t.Fatalf("the clean-up schedule asked for no wait in %v", limit)
			}
			c.mu.Lock()
			continue
		}
		select {
		case fire <- c.Now(): // RunSchedule took it: it runs RunDue next
			select {
			case <-called:
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.wait
			case <-deadline:
				t.Fatalf("the clean-up schedule's run did not end in %v", limit)
			}
		case <-called: // it left that wait for another (Rearm): fire the next
		case <-deadline:
			t.Fatalf("the clean-up schedule did not take its wait's end in %v", limit)
		}
		c.mu.Lock()
	}
}
