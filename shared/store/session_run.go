package store

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/session"
)

// A version 2 session written from contract v7 on keeps in its metadata,
// beside the sections older writers wrote: trigger (the run that started
// it), claim (its runner's) and outcome (how its run ended, with its
// revision). Older readers ignore them; times are in the contract's
// layout (session.TimeFormat).

// encodeRunSections adds rec's trigger, claim and outcome sections to metadata.
func encodeRunSections(metadata Item, rec *session.Record) {
	if tr := rec.Trigger; tr != nil {
		metadata["trigger"] = M(Item{"triggerId": S(tr.ID), "kind": S(tr.Kind), "slot": S(formatTime(tr.Slot)), "run": S(tr.RunKey)})
	}
	if c := rec.Claim; c != nil {
		metadata["claim"] = encodeClaim(c)
	}
	if o := rec.Outcome; o != nil {
		metadata["outcome"] = encodeOutcome(o)
	}
}

func encodeClaim(c *outcome.Claim) types.AttributeValue {
	return M(Item{"runner": S(c.Runner), "claimedAt": S(formatTime(c.ClaimedAt)), "heartbeatAt": S(formatTime(c.HeartbeatAt))})
}

// encodeOutcome is an outcome's map, as a session's metadata and a
// trigger's run keep it.
func encodeOutcome(o *outcome.Outcome) types.AttributeValue {
	item := Item{
		"status": S(o.Status), "endedAt": S(formatTime(o.EndedAt)), "reportedAt": S(formatTime(o.ReportedAt)),
		"revision": N(int64(o.Revision)),
	}
	if e := o.Error; e != nil {
		item["error"] = M(Item{"code": S(e.Code), "message": S(e.Message)})
	}
	return M(item)
}

// run reads the trigger, claim and outcome sections of a version 2
// record's metadata.
func (d *sessionDecoder) run(r *session.Record, md Item) {
	if tr, ok := d.Map(md, "metadata.", "trigger"); ok {
		const p = "metadata.trigger."
		r.Trigger = &session.TriggerRef{
			ID: d.Str(tr, p, "triggerId"), Kind: d.Str(tr, p, "kind"),
			Slot: d.Time(tr, p, "slot", session.TimeFormat), RunKey: d.Str(tr, p, "run"),
		}
	}
	if c, ok := d.Map(md, "metadata.", "claim"); ok {
		r.Claim = decodeClaim(&d.AttrReader, c)
	}
	if o, ok := d.Map(md, "metadata.", "outcome"); ok {
		r.Outcome = decodeOutcome(&d.AttrReader, o, "metadata.outcome.")
	}
}

func decodeClaim(d *AttrReader, c Item) *outcome.Claim {
	const p = "metadata.claim."
	claim := &outcome.Claim{
		Runner:      d.Str(c, p, "runner"),
		ClaimedAt:   d.Time(c, p, "claimedAt", session.TimeFormat),
		HeartbeatAt: d.Time(c, p, "heartbeatAt", session.TimeFormat),
	}
	if !outcome.ValidRunner(claim.Runner) {
		d.Fail("%srunner is not a runner's name", p)
	}
	return claim
}

// decodeOutcome reads an outcome's map (a session's metadata.outcome, a
// run's outcome) at path p.
func decodeOutcome(d *AttrReader, o Item, p string) *outcome.Outcome {
	out := &outcome.Outcome{
		Status:     d.Str(o, p, "status"),
		EndedAt:    d.Time(o, p, "endedAt", session.TimeFormat),
		ReportedAt: d.Time(o, p, "reportedAt", session.TimeFormat),
		Revision:   int(d.Int(o, p, "revision")),
	}
	if e, ok := d.Map(o, p, "error"); ok {
		out.Error = &outcome.Error{Code: d.Str(e, p+"error.", "code"), Message: d.Str(e, p+"error.", "message")}
	}
	if !outcome.Known(out.Status) || out.Revision < 1 {
		d.Fail("%sstatus or revision is not an outcome's", p)
	}
	return out
}

// SessionOutcomes reads the outcomes of the sessions ids, strongly
// consistent, each projected to its key and metadata.outcome (batchGet):
// found holds, by session id, those that have one. A session that does
// not exist, or has no outcome, is left out; so is one whose outcome does
// not decode, whose *InvalidSessionError is in invalid.
func (t *Table) SessionOutcomes(ctx context.Context, ids []string) (found map[string]*outcome.Outcome, invalid []error, err error) {
	keys := make([]Item, len(ids))
	for i, id := range ids {
		keys[i] = SessionKey(id)
	}
	found = map[string]*outcome.Outcome{}
	names := map[string]string{"#pk": "PK", "#md": "metadata", "#oc": "outcome"}
	err = t.batchGet(ctx, "read session outcomes", keys, aws.String("#pk, #md.#oc"), names, func(item Item) error {
		var d AttrReader
		id := strings.TrimPrefix(d.Str(item, "", "PK"), sessionPrefix)
		md, ok := d.Map(item, "", "metadata")
		var o Item
		if ok {
			o, ok = d.Map(md, "metadata.", "outcome")
		}
		var out *outcome.Outcome
		if ok {
			out = decodeOutcome(&d, o, "metadata.outcome.")
		}
		switch {
		case d.Err() != nil:
			invalid = append(invalid, &InvalidSessionError{SessionID: id, Reason: d.Err().Error()})
		case out != nil:
			found[id] = out
		}
		return nil
	})
	return found, invalid, err
}
