package seed

// Causes the tests outside the package check for.
var (
	ErrRenderBudget = errRenderBudget
	ErrLeaseLost    = errLeaseLost
)
