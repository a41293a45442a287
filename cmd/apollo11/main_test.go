package main

import (
	"os"
	"testing"

	"github.com/apollo11/apollo11/internal/testbin"
)

// TestMain removes the binary the process tests build (testbin.Main).
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
