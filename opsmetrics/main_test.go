package opsmetrics_test

import (
	"testing"

	"github.com/seckill/seckill/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine running.
func TestMain(m *testing.M) { testenv.LeakCheckMain(m) }
