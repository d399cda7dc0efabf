package amplan

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xres/xres/conf"
)

// The node label, tags and priority am submit asks for are read with the
// other application settings; a priority neither -1 nor at least 0, or not
// a number, is refused naming its key.
func TestAppSettingsLabelTagsPriority(t *testing.T) {
	tests := []struct {
		name     string
		kv       map[string]string
		label    string
		tags     []string
		prio     *int32
		errParts []string
	}{
		{name: "unset", kv: nil},
		{name: "all", kv: map[string]string{"yarn.application.node-label": "gpu", "yarn.tags": "a, b,,c ", "yarn.application.priority": "3"},
			label: "gpu", tags: []string{"a", "b", "c"}, prio: ptr32((3))},
		{name: "priority zero is sent", kv: map[string]string{"yarn.application.priority": "0"}, prio: ptr32((0))},
		{name: "priority -1 is the queue's", kv: map[string]string{"yarn.application.priority": "-1"}},
		{name: "priority below -1", kv: map[string]string{"yarn.application.priority": "-2"},
			errParts: []string{"yarn.application.priority", "got -2"}},
		{name: "priority not a number", kv: map[string]string{"yarn.application.priority": "high"},
			errParts: []string{"yarn.application.priority", "high"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := conf.New()
			for k, v := range tt.kv {
				cfg.Set(k, v)
			}
			r, err := appSettings(cfg)
			if len(tt.errParts) > 0 {
				require.ErrorIs(t, err, ErrBadConfig)
				for _, s := range tt.errParts {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.label, r.NodeLabel)
			require.Equal(t, tt.tags, r.Tags)
			require.Equal(t, tt.prio, r.Priority)
		})
	}
}

func ptr32(v int32) *int32 { return &v }
