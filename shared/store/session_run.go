package store

import (
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
