// Package httpapi carries API Gateway HTTP API (payload 2.0) events in and
// out: routing with 404 and 405, the caller from the authorizer's claims,
// the body with its size limit, and problem+json errors (strict JSON is
// jsonbody's).
// It knows nothing of sessions or DynamoDB.
package httpapi

import (
	"encoding/json/v2"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cloud-agent/control-plane/shared/ids"
	"github.com/cloud-agent/control-plane/shared/problem"
)

// AdminScope is the scope token that makes a caller an admin.
const AdminScope = "cloud-agent:admin"

// Caller is who makes a request, as the JWT authorizer vouches for it.
type Caller struct {
	UserID string
	OrgIDs []string
	BotID  string
	Admin  bool
}

// InOrg reports whether the caller is a member of the org.
func (c Caller) InOrg(orgID string) bool { return slices.Contains(c.OrgIDs, orgID) }

// Owns reports whether the caller owns something stored for userID and
// orgID ("" for none): the same user, and an org the caller is in.
func (c Caller) Owns(userID, orgID string) bool {
	return userID == c.UserID && (orgID == "" || c.InOrg(orgID))
}

var errUnauthorized = problem.New(problem.Unauthorized, "The request has no valid caller.")

// callerFrom reads the caller from the claims the authorizer put in the
// event. It never reads the Authorization header. No sub, or a claim that
// is malformed, is unauthorized.
func callerFrom(req *events.APIGatewayV2HTTPRequest) (Caller, error) {
	auth := req.RequestContext.Authorizer
	if auth == nil || auth.JWT == nil {
		return Caller{}, errUnauthorized
	}
	claims := auth.JWT.Claims
	bot, hasBot := claims["bot_id"]
	c := Caller{UserID: claims["sub"], BotID: bot}
	if !ids.IsID(c.UserID) || (hasBot && !ids.IsID(bot)) {
		return Caller{}, errUnauthorized
	}
	orgs, ok := parseOrgIDs(claims["org_ids"])
	if !ok {
		return Caller{}, errUnauthorized
	}
	c.OrgIDs = orgs
	c.Admin = slices.Contains(strings.Fields(claims["scope"]), AdminScope)
	return c, nil
}

// parseOrgIDs reads org_ids as a JSON array string, the gateway's rendering
// of an array ("[a b]"), or a list separated by commas or spaces.
func parseOrgIDs(s string) ([]string, bool) {
	s = strings.TrimSpace(s)
	var orgs []string
	if strings.HasPrefix(s, "[") && json.Unmarshal([]byte(s), &orgs) != nil {
		orgs = nil
		inner, ok := strings.CutSuffix(s[1:], "]")
		if !ok {
			return nil, false
		}
		s = inner
	}
	if orgs == nil {
		orgs = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	}
	for _, id := range orgs {
		if !ids.IsID(id) {
			return nil, false
		}
	}
	return orgs, true
}
