package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Pruning the blob store (rein runs prune --temporal ADDR --blobs DIR). A
// blob may still be read while any execution the namespace holds (open,
// or closed within its retention) refers to it: a worker replays the
// history, rein runs show reads it, a retry reads the failed execution's
// Closed details. The scan lists every execution of the namespace and
// reads each history's raw payloads (never decoded through the codec, so
// a missing blob does not stop it) for references; PruneBlobs then deletes
// the blobs no reference names, once their file is old enough that no run
// can be about to record one (BlobCodec.put refreshes the mtime of a blob
// it finds already stored).

// BlobScanLimits bound a scan of a namespace's histories.
type BlobScanLimits struct {
	// Executions is the most executions the scan reads; past it the scan
	// fails (a partial scan cannot tell which blobs are unreferenced).
	// Zero: 100,000.
	Executions int
}

// BlobScan is what a scan found.
type BlobScan struct {
	// Executions is how many executions' histories were read; Events how
	// many events they held.
	Executions int `json:"executions"`
	Events     int `json:"events"`
	// Referenced holds the sha256 of every blob a history refers to.
	Referenced map[string]bool `json:"-"`
}

// maxPayloadDepth bounds the walk of one event's messages.
const maxPayloadDepth = 64

// ReferencedBlobs lists every execution of namespace ns (ListWorkflow,
// paged, every status) and reads each one's history for blob references.
// It stops with an error at ctx's end or past lim: a scan that did not
// read every history must not lead to a deletion. An execution whose
// history is gone by the time it is read (retention) is skipped.
func ReferencedBlobs(ctx context.Context, c client.Client, ns string, lim BlobScanLimits) (*BlobScan, error) {
	if lim.Executions <= 0 {
		lim.Executions = 100_000
	}
	scan := &BlobScan{Referenced: map[string]bool{}}
	var token []byte
	for {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return scan, fmt.Errorf("list the executions of namespace %s: %w", ns, err)
		}
		for _, ex := range res.GetExecutions() {
			if scan.Executions >= lim.Executions {
				return scan, fmt.Errorf("namespace %s holds more than %d executions: the scan stopped there and nothing can be pruned", ns, lim.Executions)
			}
			id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			if err := scanHistory(ctx, c, id, run, scan); err != nil {
				return scan, err
			}
			if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				if err := scanPending(ctx, c, id, run, scan); err != nil {
					return scan, err
				}
			}
			scan.Executions++
		}
		if token = res.GetNextPageToken(); len(token) == 0 {
			return scan, nil
		}
	}
}

// scanHistory adds the references of one execution's history to scan.
func scanHistory(ctx context.Context, c client.Client, id, run string, scan *BlobScan) error {
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil // deleted since the listing: no one reads it any more
		}
		if err != nil {
			return fmt.Errorf("history of workflow %s (run %s): %w", id, run, err)
		}
		scan.Events++
		if err := BlobRefs(ev, scan.Referenced); err != nil {
			return fmt.Errorf("history of workflow %s (run %s), event %d: %w", id, run, ev.GetEventId(), err)
		}
	}
	return nil
}

// scanPending adds the references an open execution holds outside its
// history: its pending activities' heartbeat details and last failures.
func scanPending(ctx context.Context, c client.Client, id, run string, scan *BlobScan) error {
	d, err := c.DescribeWorkflowExecution(ctx, id, run)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("describe workflow %s (run %s): %w", id, run, err)
	}
	if err := BlobRefs(d, scan.Referenced); err != nil {
		return fmt.Errorf("workflow %s (run %s), its pending activities: %w", id, run, err)
	}
	return nil
}

// BlobRefs adds to into the sha256 of every blob reference among the
// payloads anywhere in m (an event's input, result, failure details, a
// failure's cause's details, memo, markers …): each payload whose
// metadata encoding is rein/blob-ref. A reference it cannot read is an
// error: the prune must not guess.
func BlobRefs(m proto.Message, into map[string]bool) error {
	return walkPayloads(m.ProtoReflect(), 0, func(p *commonpb.Payload) error {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != blobEncoding {
			return nil
		}
		ref, err := parseBlobRef(p.GetData())
		if err != nil {
			return err
		}
		into[strings.ToLower(ref.SHA256)] = true // the store's names are lower case
		return nil
	})
}

var payloadName = (&commonpb.Payload{}).ProtoReflect().Descriptor().FullName()

// walkPayloads calls f on every Payload message in m, depth first.
func walkPayloads(m protoreflect.Message, depth int, f func(*commonpb.Payload) error) error {
	if depth > maxPayloadDepth {
		return fmt.Errorf("messages nested deeper than %d", maxPayloadDepth)
	}
	if m.Descriptor().FullName() == payloadName {
		p, ok := m.Interface().(*commonpb.Payload)
		if !ok {
			return nil
		}
		return f(p)
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = walkPayloads(l.Get(i).Message(), depth+1, f)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				err = walkPayloads(mv.Message(), depth+1, f)
				return err == nil
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			err = walkPayloads(v.Message(), depth+1, f)
		}
		return err == nil
	})
	return err
}
