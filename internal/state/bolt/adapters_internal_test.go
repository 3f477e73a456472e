package bolt

// adapters is every adapter in one file as one value, for the tests that
// use several ports of one file and the file itself. Schedules and Config
// are embedded under other names: a field called Schedules or Config would
// hide the method of that name.
type adapters struct {
	*store
	*Tasks
	*Usage
	*schedulesPort
	*configPort
	*Claims
}

type (
	schedulesPort = Schedules
	configPort    = Config
)

// openAll opens the file at path and returns its adapters.
func openAll(path string) (*adapters, error) {
	d, err := Open(path)
	if err != nil {
		return nil, err
	}
	return &adapters{d.s, d.Tasks(), d.Usage(), d.Schedules(), d.Config(), d.Claims()}, nil
}

func (a *adapters) Close() error { return a.db.Close() }
