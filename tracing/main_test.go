package tracing_test

import (
	"testing"

	"github.com/seckill/seckill/internal/testenv"
)

func TestMain(m *testing.M) { testenv.LeakCheckMain(m) }
