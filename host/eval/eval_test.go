package eval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirhost/weir/host/eval"
)

func TestBaselineReproducesTheDemo(t *testing.T) {
	id, events := loadEvents(t, demo)
	rec, err := eval.Record(id, events)
	require.NoError(t, err)
	set := firstParty(t, runtime(t), "baseline", rec.Route, `{"headroomTokens": 1024}`)
	set.Baseline = true
	res, err := eval.Replay(context.Background(), rec, set, eval.Options{})
	require.NoError(t, err)
	require.Empty(t, res.Notes)
	require.Equal(t, len(rec.Requests), res.Totals.Requests)
	require.Equal(t, len(rec.Requests), res.Totals.Reproduced)
	require.Equal(t, 1, res.Totals.Summaries.Reused)
	t.Logf("%+v", res.Totals)
	for _, r := range res.Requests {
		t.Logf("%+v", r)
	}
}
