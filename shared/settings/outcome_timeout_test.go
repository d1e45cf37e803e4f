package settings_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/settings"
)

// TestOutcomeTimeout: outcome/timeout-minutes through the real SSM client,
// from the same read as the policy: a whole number of minutes from 1 to
// 10080; unset, or any other value (ignored with a warning), 180. The
// built-in parameters hold 180 too.
func TestOutcomeTimeout(t *testing.T) {
	for _, r := range []struct {
		rule, value string
		set         bool
		want        time.Duration
		warned      bool
	}{
		{"unset: the built-in value", "", false, 180 * time.Minute, false},
		{"a whole number", "60", true, time.Hour, false},
		{"spaces around it", " 30 ", true, 30 * time.Minute, false},
		{"the least", "1", true, time.Minute, false},
		{"the most, a week", "10080", true, 7 * 24 * time.Hour, false},
		{"zero", "0", true, 180 * time.Minute, true},
		{"negative", "-5", true, 180 * time.Minute, true},
		{"over the most", "10081", true, 180 * time.Minute, true},
		{"not a whole number", "1.5", true, 180 * time.Minute, true},
		{"a duration", "3h", true, 180 * time.Minute, true},
	} {
		t.Run(r.rule, func(t *testing.T) {
			var params []settings.Parameter
			if r.set {
				params = append(params, settings.Parameter{Name: settings.ParamOutcomeTimeout, Type: "String", Value: r.value})
			}
			url, _ := standIn(t, params)
			ctx, record := invocation.With(context.Background())
			s := settings.New(client(url), path, time.Minute)
			d, err := s.OutcomeTimeout(ctx)
			warned := strings.Contains(strings.Join(record.Warnings(), "\n"), settings.ParamOutcomeTimeout)
			if err != nil || d != r.want || warned != r.warned {
				t.Errorf("%v, warned %t: %v", d, warned, err)
			}
			if _, err := s.Policy(ctx); err != nil || len(record.Warnings()) > 1 {
				t.Errorf("the policy is not of the same read: %v %v", err, record.Warnings())
			}
		})
	}
	builtin := map[string]settings.Parameter{}
	for _, p := range settings.Builtin() {
		builtin[p.Name] = p
	}
	if p := builtin[settings.ParamOutcomeTimeout]; p.Value != "180" || p.Type != "String" {
		t.Errorf("built in as %+v", p)
	}
}
