package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/rest"
)

func TestApplyConfig(t *testing.T) {
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
			label: "gpu", tags: []string{"a", "b", "c"}, prio: ptr(int32(3))},
		{name: "priority zero is sent", kv: map[string]string{"yarn.application.priority": "0"}, prio: ptr(int32(0))},
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
			var r Request
			err := r.ApplyConfig(cfg)
			if len(tt.errParts) > 0 {
				require.ErrorIs(t, err, conf.ErrInvalid)
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

func ptr[T any](v T) *T { return &v }

// The node label, tags and priority reach both submission forms; unset,
// none of them is sent.
func TestSubmissionLabelTagsPriority(t *testing.T) {
	req := Request{NodeLabel: "gpu", Tags: []string{"a", "b"}, Priority: ptr(int32(2))}
	sub := NewSubmission("application_1_0001", req, yarn.LaunchContext{Commands: []string{"am run"}})
	asc, err := yarn.SubmissionProto(sub)
	require.NoError(t, err)
	require.Equal(t, "gpu", asc.GetNodeLabelExpression())
	require.Equal(t, []string{"a", "b"}, asc.GetApplicationTags())
	require.Equal(t, int32(2), asc.GetPriority().GetPriority())
	body, err := rest.NewSubmission(sub)
	require.NoError(t, err)
	require.Equal(t, "gpu", body.AppNodeLabelExpression)
	require.Equal(t, []string{"a", "b"}, body.ApplicationTags.Tag)
	require.Equal(t, 2, body.Priority)

	asc, err = yarn.SubmissionProto(NewSubmission("application_1_0001", Request{}, yarn.LaunchContext{}))
	require.NoError(t, err)
	require.Nil(t, asc.NodeLabelExpression)
	require.Nil(t, asc.Priority)
	require.Empty(t, asc.ApplicationTags)
}
