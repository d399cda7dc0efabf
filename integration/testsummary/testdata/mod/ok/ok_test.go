package ok

import "testing"

func TestPasses(t *testing.T) {}

func TestSkipsWithReason(t *testing.T) { t.Skip("needs a GPU") }

func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
	t.Run("b", func(t *testing.T) {})
}
