package temporal

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/journal"
)

// The custom search attributes a run carries, keywords all, so that the
// Temporal UI and `temporal workflow list --query` find runs by flow,
// status and tenant: ReinFlow = 'resume-screen' AND ReinStatus = 'waiting'.
// ReinStatus follows the run's status (running, waiting, failed,
// succeeded, cancelled) as it changes.
const (
	AttrFlow   = "ReinFlow"
	AttrStatus = "ReinStatus"
	AttrTenant = "ReinTenant"
)

var (
	keyFlow   = temporal.NewSearchAttributeKeyKeyword(AttrFlow)
	keyStatus = temporal.NewSearchAttributeKeyKeyword(AttrStatus)
	keyTenant = temporal.NewSearchAttributeKeyKeyword(AttrTenant)
)

// attrNames are the search attributes rein registers, in order.
var attrNames = []string{AttrFlow, AttrStatus, AttrTenant}

// RegisterSearchAttributes registers rein's search attributes (AttrFlow,
// AttrStatus, AttrTenant) in namespace ns, those it lacks: rein worker
// does so as it starts. It needs the operator service's permission; a
// server that refuses leaves runs without them (StartRun checks).
func RegisterSearchAttributes(ctx context.Context, c client.Client, ns string) error {
	have, err := searchAttributes(ctx, c, ns)
	if err != nil {
		return err
	}
	add := map[string]enumspb.IndexedValueType{}
	for _, n := range attrNames {
		if _, ok := have[n]; !ok {
			add[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(add) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: add})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("temporal: register search attributes %v in namespace %s: %w", attrNames, ns, err)
	}
	return nil
}

// HasSearchAttributes reports whether namespace ns has rein's search
// attributes, as keywords.
func HasSearchAttributes(ctx context.Context, c client.Client, ns string) (bool, error) {
	have, err := searchAttributes(ctx, c, ns)
	if err != nil {
		return false, err
	}
	for _, n := range attrNames {
		if t, ok := have[n]; !ok || t != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			return false, nil
		}
	}
	return true, nil
}

func searchAttributes(ctx context.Context, c client.Client, ns string) (map[string]enumspb.IndexedValueType, error) {
	res, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("temporal: list the search attributes of namespace %s: %w", ns, err)
	}
	return res.GetCustomAttributes(), nil
}

// startAttributes are a run's search attributes as it starts.
func startAttributes(in *Start) temporal.SearchAttributes {
	set := []temporal.SearchAttributeUpdate{keyFlow.ValueSet(in.Flow), keyStatus.ValueSet(string(journal.RunRunning))}
	if in.Tenant != "" {
		set = append(set, keyTenant.ValueSet(in.Tenant))
	}
	return temporal.NewSearchAttributes(set...)
}

// publish upserts the run's status (AttrStatus) when it changed since it
// was last published. A run started without search attributes (its
// namespace lacks them, or the run was recorded before they existed:
// Start.SearchAttributes false) upserts nothing, so its history replays.
func (r *wrun) publish(ctx workflow.Context) {
	if !r.in.SearchAttributes || r.status == r.published {
		return
	}
	if r.published == "" && r.status == journal.RunRunning {
		r.published = r.status // the start set it
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, keyStatus.ValueSet(string(r.status))); err != nil {
		workflow.GetLogger(ctx).Warn("rein: upsert the run's status search attribute", "error", err)
		return
	}
	r.published = r.status
}
