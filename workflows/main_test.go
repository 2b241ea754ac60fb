package workflows_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/seckill/seckill/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine running, but for
// the SDK test environment's wait for an activity retry that a cancelled
// workflow no longer needs (it parks until a timer the finished test never
// fires: ShopEvents cancelled while it retries a delivery).
func TestMain(m *testing.M) {
	testenv.LeakCheckMain(m,
		goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*testWorkflowEnvironmentImpl).executeActivityWithRetryForTest"),
		goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*testWorkflowEnvironmentImpl).ExecuteActivity.func2"),
	)
}
