package bad

import "testing"

func TestFails(t *testing.T) { t.Fatal("the reason it failed") }

func TestPassesToo(t *testing.T) {}
