//go:build integration

package integration

import (
	"context"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
)

// rawRM is the RM client through its escape hatch (yarn.Client.Call): the
// protocol tests assert on fields of the RM's answers that yarn's Go types
// do not carry (launch times, attempt ids, health report times), so they
// send and read the wire messages themselves.
type rawRM struct{ c *yarn.Client }

func raw(c *yarn.Client) rawRM { return rawRM{c: c} }

func (r rawRM) GetNewApplication(ctx context.Context) (*hadoopyarn.GetNewApplicationResponseProto, error) {
	resp := &hadoopyarn.GetNewApplicationResponseProto{}
	return resp, r.c.Call(ctx, "getNewApplication", &hadoopyarn.GetNewApplicationRequestProto{}, resp)
}

func (r rawRM) SubmitApplication(ctx context.Context, asc *hadoopyarn.ApplicationSubmissionContextProto) error {
	return r.c.Call(ctx, "submitApplication", &hadoopyarn.SubmitApplicationRequestProto{ApplicationSubmissionContext: asc},
		&hadoopyarn.SubmitApplicationResponseProto{})
}

func (r rawRM) GetApplicationReport(ctx context.Context, id *hadoopyarn.ApplicationIdProto) (*hadoopyarn.ApplicationReportProto, error) {
	resp := &hadoopyarn.GetApplicationReportResponseProto{}
	if err := r.c.Call(ctx, "getApplicationReport", &hadoopyarn.GetApplicationReportRequestProto{ApplicationId: id}, resp); err != nil {
		return nil, err
	}
	return resp.GetApplicationReport(), nil
}

func (r rawRM) KillApplication(ctx context.Context, id *hadoopyarn.ApplicationIdProto, diagnostics string) error {
	return r.c.KillApplication(ctx, yarn.ApplicationID(id), diagnostics)
}

func (r rawRM) GetClusterNodes(ctx context.Context, states ...hadoopyarn.NodeStateProto) ([]*hadoopyarn.NodeReportProto, error) {
	resp := &hadoopyarn.GetClusterNodesResponseProto{}
	if err := r.c.Call(ctx, "getClusterNodes", &hadoopyarn.GetClusterNodesRequestProto{NodeStates: states}, resp); err != nil {
		return nil, err
	}
	return resp.GetNodeReports(), nil
}

func (r rawRM) GetClusterMetrics(ctx context.Context) (*hadoopyarn.YarnClusterMetricsProto, error) {
	resp := &hadoopyarn.GetClusterMetricsResponseProto{}
	if err := r.c.Call(ctx, "getClusterMetrics", &hadoopyarn.GetClusterMetricsRequestProto{}, resp); err != nil {
		return nil, err
	}
	return resp.GetClusterMetrics(), nil
}
