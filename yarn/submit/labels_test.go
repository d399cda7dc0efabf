package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/rest"
)

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
