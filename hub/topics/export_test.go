package topics

import "context"

// Steps has t's fan-outs look at step followers a step, and run before
// each step (it may block, until ctx ends). Call it before the core starts.
func (t *Topics) Steps(step int, before func(ctx context.Context, id string)) {
	t.run.step, t.run.beforeStep = step, before
}
