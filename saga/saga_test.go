package saga_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/saga"
)

func TestStartOptions_SameForEveryStarter(t *testing.T) {
	payBy := time.Date(2026, 11, 22, 10, 0, 30, 512_000_000, time.UTC)
	in := seckill.SagaInput{OrderID: 42, SaleID: 7, UserID: "alice", AdmittedAt: payBy.Add(-30 * time.Second),
		PayBy: payBy, AmountCents: 990, Currency: "usd"}

	opts := saga.New(nil, saga.Options{TaskQueue: "q", EagerStart: true}).StartOptions(in)

	require.Equal(t, "order-42", opts.ID)
	require.Equal(t, "q", opts.TaskQueue)
	require.True(t, opts.EnableEagerStart)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY, opts.WorkflowIDReusePolicy,
		"a completed saga decided its order; only a run that failed, was cancelled or terminated may be run again")
	sale, _ := opts.TypedSearchAttributes.GetKeyword(saga.SaleIDAttr)
	user, _ := opts.TypedSearchAttributes.GetKeyword(saga.UserIDAttr)
	status, _ := opts.TypedSearchAttributes.GetKeyword(saga.OrderStatusAttr)
	require.Equal(t, []string{"7", "alice", "QUEUED"}, []string{sale, user, status})
	require.Equal(t, map[string]any{
		seckill.MemoAmountCents: int64(990), seckill.MemoCurrency: "usd", seckill.MemoPayBy: "2026-11-22T10:00:30.512Z",
	}, opts.Memo, "what the buyer owes and until when, from the first event on")
}

func TestStartOptions_InputsWithoutTermsHaveNoMemo(t *testing.T) {
	opts := saga.New(nil, saga.Options{}).StartOptions(seckill.SagaInput{OrderID: 1, SaleID: 1, UserID: "u"})

	require.Equal(t, seckill.DefaultTaskQueue, opts.TaskQueue)
	require.False(t, opts.EnableEagerStart)
	require.Nil(t, opts.Memo, "an entry written before payable-at-admission: the saga derives pay_by")
}
