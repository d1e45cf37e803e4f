package template_test

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/testkit"
)

// The principals and conditions of the secrets keys' grants, as the SAM
// translator's output writes them (policyText, testkit.JSON).
const (
	environmentsRole = "${EnvironmentsFunctionRole.Arn}"
	executionPlane   = "${ExecutionPlaneRoleArn}"
	accountRoot      = "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
	// An environment's secret: the context is exactly {"environmentId":
	// "env_…", "variable": <name>}.
	environmentContext = `{"ForAllValues:StringEquals":{"kms:EncryptionContextKeys":["environmentId","variable"]},` +
		`"Null":{"kms:EncryptionContext:environmentId":"false","kms:EncryptionContext:variable":"false"},` +
		`"StringLike":{"kms:EncryptionContext:environmentId":"env_*"}}`
	// A trigger's secret: the context is exactly {"triggerId": "trg_…"}.
	triggerContext = `{"ForAllValues:StringEquals":{"kms:EncryptionContextKeys":["triggerId"]},` +
		`"StringLike":{"kms:EncryptionContext:triggerId":"trg_*"}}`
)

// keyUses are the actions by which a principal uses a key's secrets
// rather than administers the key: a symmetric key's, an HMAC key's
// (GenerateMac, VerifyMac); CreateGrant hands them on.
var keyUses = []string{"kms:Encrypt", "kms:Decrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:GenerateDataKey",
	"kms:GenerateDataKeyWithoutPlaintext", "kms:GenerateDataKeyPair", "kms:GenerateDataKeyPairWithoutPlaintext", "kms:CreateGrant",
	"kms:GenerateMac", "kms:VerifyMac"}

// webhookGrants are the roles' grants on WebhookSecretsKey, each under a
// trigger's context; macGrants the roles' grants on WebhookKey.
var (
	webhookGrants = []string{"TriggerHookFunctionRole kms:Decrypt", "TriggersFunctionRole kms:Decrypt", "TriggersFunctionRole kms:Encrypt"}
	macGrants     = []string{"TriggerHookFunctionRole kms:GenerateMac", "TriggersFunctionRole kms:GenerateMac"}
)

// tokenRoles are the principals SessionTokenKey lets derive tokens, each
// in a statement of its own: the session events function's role and the
// runtime function's, sorted.
var tokenRoles = []string{"${RuntimeFunctionRole.Arn}", "${SessionEventsFunctionRole.Arn}"}

// TestSecretsKeys judges the secrets keys' grants (and SessionTokenKey's) on the SAM translator's
// output (judgeSecretsKeys), with ExecutionPlaneRoleArn empty and set, and
// each of a set of mutations of the template, which must be refused for
// the fault it makes.
func TestSecretsKeys(t *testing.T) {
	needSAMTranslator(t, "the KMS keys' grants are not judged")
	written, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	const plane = "arn:aws:iam::123456789012:role/execution-plane"
	const encrypt = "              AWS: !GetAtt EnvironmentsFunctionRole.Arn\n            Action: kms:Encrypt\n"
	const encryptContext = encrypt + "            Resource: \"*\"\n            Condition:\n"
	const decrypt = "            - Sid: TheExecutionPlaneDecrypts\n"
	const hookDecrypt = "              Action: kms:Decrypt\n              Resource: !GetAtt WebhookSecretsKey.Arn\n"
	const environmentsPolicies = "        Variables:\n          ENVIRONMENT_SECRETS_KEY_ID: !GetAtt EnvironmentSecretsKey.Arn\n      Policies:\n        - Statement:\n"
	const triggersTable = "            - Effect: Allow\n              # ConditionCheckItem: a start now's transaction holds the\n"
	// The account's administration of EnvironmentSecretsKey (its last
	// action, which the HMAC keys do not have), of SessionTokenKey, the
	// events role's statement and policy, the runtime role's statement and
	// policy, and SessionTokenKey's head.
	const envAdmin = "              - kms:RotateKeyOnDemand\n"
	const tokenAdmin = "              - kms:CancelKeyDeletion\n            Resource: \"*\"\n          - Sid: TheSessionEventsFunctionDerivesTokens\n"
	const derive = "              AWS: !GetAtt SessionEventsFunctionRole.Arn\n            Action: kms:GenerateMac\n"
	const eventsPolicies = "              Action: events:PutEvents\n              Resource: !GetAtt SessionsBus.Arn\n"
	const runtimeDerives = "          - Sid: TheRuntimeFunctionDerivesTokens\n            Effect: Allow\n            Principal:\n" +
		"              AWS: !GetAtt RuntimeFunctionRole.Arn\n            Action: kms:GenerateMac\n            Resource: \"*\"\n"
	const runtimePolicies = "              # metadata, its live entry, its trigger run.\n"
	const tokenKey = "  SessionTokenKey:\n    Type: AWS::KMS::Key\n    DeletionPolicy: Retain\n"
	const tokenSpec = "      Description: Derives sessions' tokens (GenerateMac).\n      KeySpec: HMAC_256\n"
	cases := []struct{ name, plane, old, new, want string }{
		{name: "the template as it is, without an execution plane"},
		{name: "the template as it is, with an execution plane", plane: plane},
		{"an Encrypt grant without its conditions", "", encryptContext, encrypt + "            Resource: \"*\"\n            Unconditioned:\n", environmentsRole + " may [kms:Encrypt]"},
		{"an Encrypt grant without the Null condition", "", "              \"Null\":\n                kms:EncryptionContext:environmentId: \"false\"\n                kms:EncryptionContext:variable: \"false\"\n          - !If\n",
			"          - !If\n", environmentsRole + " may [kms:Encrypt]"},
		{"kms:Decrypt beside kms:Encrypt for the environments' role", "", encrypt, strings.Replace(encrypt, "kms:Encrypt", "[kms:Encrypt, kms:Decrypt]", 1), "kms:Decrypt"},
		{"kms:Encrypt for the triggers' role too", "", encrypt, strings.Replace(encrypt, "!GetAtt EnvironmentsFunctionRole.Arn", "[!GetAtt EnvironmentsFunctionRole.Arn, !GetAtt TriggersFunctionRole.Arn]", 1), "${TriggersFunctionRole.Arn}"},
		{"kms:Encrypt on EnvironmentSecretsKey in the environments' role policy too", "", environmentsPolicies,
			environmentsPolicies + "            - Effect: Allow\n              Action: kms:Encrypt\n              Resource: !GetAtt EnvironmentSecretsKey.Arn\n", "EnvironmentsFunctionRole may kms:Encrypt"},
		{"kms:Decrypt on EnvironmentSecretsKey in the triggers' role policy", "", triggersTable,
			"            - Effect: Allow\n              Action: kms:Decrypt\n              Resource: !GetAtt EnvironmentSecretsKey.Arn\n" + triggersTable, "TriggersFunctionRole may kms:Decrypt"},
		{"kms:* on every key in the hook's role policy", "", hookDecrypt, "              Action: kms:*\n              Resource: \"*\"\n", "TriggerHookFunctionRole may kms:Encrypt, kms:Decrypt"},
		{"kms:* for the account", "", envAdmin, envAdmin + "              - kms:*\n", accountRoot + " may [kms:Encrypt kms:Decrypt"},
		{"kms:Decrypt for the account", "", envAdmin, envAdmin + "              - kms:Decrypt\n", accountRoot + " may [kms:Decrypt]"},
		{"kms:Create* for the account, CreateGrant in it", "", envAdmin, envAdmin + "              - kms:Create*\n", accountRoot + " may [kms:CreateGrant]"},
		{"kms:Generate* for the account on SessionTokenKey", "", tokenAdmin, "              - kms:Generate*\n" + tokenAdmin, "SessionTokenKey: " + accountRoot + " may [kms:GenerateDataKey"},
		{"kms:GenerateMac on SessionTokenKey for the triggers' role too", "", derive,
			strings.Replace(derive, "!GetAtt SessionEventsFunctionRole.Arn", "[!GetAtt SessionEventsFunctionRole.Arn, !GetAtt TriggersFunctionRole.Arn]", 1), "${TriggersFunctionRole.Arn}"},
		{"kms:VerifyMac beside kms:GenerateMac for the events role", "", derive, strings.Replace(derive, "kms:GenerateMac", "[kms:GenerateMac, kms:VerifyMac]", 1), "kms:VerifyMac"},
		{"kms:GenerateMac on SessionTokenKey in the triggers' role policy", "", triggersTable,
			"            - Effect: Allow\n              Action: kms:GenerateMac\n              Resource: !GetAtt SessionTokenKey.Arn\n" + triggersTable, "TriggersFunctionRole may kms:GenerateMac on ${SessionTokenKey.Arn}"},
		{"kms:GenerateMac on WebhookKey for the events role", "", eventsPolicies,
			eventsPolicies + "            - Effect: Allow\n              Action: kms:GenerateMac\n              Resource: !GetAtt WebhookKey.Arn\n", "SessionEventsFunctionRole kms:GenerateMac"},
		{"kms:GenerateMac on SessionTokenKey for the runtime role taken away", "", runtimeDerives, "", "SessionTokenKey: the runtime function's role may not kms:GenerateMac"},
		{"kms:GenerateMac on SessionTokenKey for a third role, in a statement of its own", "", runtimeDerives,
			runtimeDerives + strings.ReplaceAll(runtimeDerives, "Runtime", "Triggers"), "${TriggersFunctionRole.Arn}"},
		{"kms:VerifyMac beside kms:GenerateMac for the runtime role", "", runtimeDerives,
			strings.Replace(runtimeDerives, "Action: kms:GenerateMac", "Action: [kms:GenerateMac, kms:VerifyMac]", 1), "kms:VerifyMac"},
		{"kms:GenerateMac on WebhookKey for the runtime role", "", runtimePolicies,
			runtimePolicies + "              Action: kms:GenerateMac\n              Resource: !GetAtt WebhookKey.Arn\n            - Effect: Allow\n", "RuntimeFunctionRole kms:GenerateMac"},
		{"kms:Decrypt on EnvironmentSecretsKey for the runtime role", "", runtimePolicies,
			runtimePolicies + "              Action: kms:Decrypt\n              Resource: !GetAtt EnvironmentSecretsKey.Arn\n            - Effect: Allow\n", "RuntimeFunctionRole may kms:Decrypt"},
		{"SessionTokenKey deleted with the stack", "", tokenKey, strings.Replace(tokenKey, "Retain", "Delete", 1), "SessionTokenKey: DeletionPolicy"},
		{"SessionTokenKey a symmetric key", "", tokenSpec, strings.Replace(tokenSpec, "HMAC_256", "SYMMETRIC_DEFAULT", 1), "SessionTokenKey: KeySpec"},
		{"the execution plane's statement without its parameter", "", "          - !If\n            - HasExecutionPlaneRole\n", "          - !If\n            - HasAlarmTopic\n", "HasAlarmTopic"},
		{"the execution plane's Decrypt without its conditions", plane, decrypt + "              Effect: Allow\n              Principal:\n                AWS: !Ref ExecutionPlaneRoleArn\n              Action: kms:Decrypt\n              Resource: \"*\"\n              Condition:\n",
			decrypt + "              Effect: Allow\n              Principal:\n                AWS: !Ref ExecutionPlaneRoleArn\n              Action: kms:Decrypt\n              Resource: \"*\"\n              Unconditioned:\n", executionPlane + " may [kms:Decrypt]"},
		{"the hook's Decrypt without its trigger's context", "", hookDecrypt + "              # Only under the context the code gives a trigger's\n              # secret: exactly {\"triggerId\": <the trigger's id>}.\n              Condition:\n",
			hookDecrypt + "              Unconditioned:\n", "TriggerHookFunctionRole kms:Decrypt on WebhookSecretsKey"},
	}
	inputs := make([]samInput, len(cases))
	for i, c := range cases {
		text := string(written)
		if c.old != "" {
			if n := strings.Count(text, c.old); n != 1 {
				t.Fatalf("%s: the mutation's text is %d times in the template, not once:\n%s", c.name, n, c.old)
			}
			text = strings.Replace(text, c.old, c.new, 1)
		}
		params := map[string]string{"ExecutionPlaneRoleArn": c.plane}
		for k, v := range deployParams {
			params[k] = v
		}
		inputs[i] = samInput{text, "s3://code/bootstrap.zip", params}
	}
	for i, out := range transformAll(t, inputs) {
		c := cases[i]
		t.Run(c.name, func(t *testing.T) {
			v := judgeSecretsKeys(decodeTemplate(t, out), c.plane != "")
			verdict(t, c.old != "", v)
			if c.want != "" && !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("no violation says %q", c.want)
			}
		})
	}
}

// judgeSecretsKeys judges a template as the SAM translator writes it, with
// the parameter ExecutionPlaneRoleArn set (plane) or empty, and reports:
//   - on EnvironmentSecretsKey's policy, any statement but the account's
//     administration (no use of keyUses), kms:Encrypt to
//     EnvironmentsFunction's role alone under an environment's context,
//     and, when plane, kms:Decrypt to the parameter's role alone under the
//     same context; either of the two missing, or the Decrypt present
//     without plane;
//   - on SessionTokenKey, what judgeTokenKey reports;
//   - any role policy (an IAM::Role's, or an IAM::Policy, ManagedPolicy or
//     RolePolicy) that allows a use of EnvironmentSecretsKey, of
//     SessionTokenKey or of every key (rolePolicyUses);
//   - any of the roles' grants of WebhookSecretsKey's use but those of
//     webhookGrants, each under a trigger's context, and of WebhookKey's
//     but those of macGrants.
func judgeSecretsKeys(tpl map[string]any, plane bool) []string {
	var v []string
	resources, _ := tpl["Resources"].(map[string]any)
	if c := testkit.JSON(dig(tpl, "Conditions", "HasExecutionPlaneRole")); c != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"ExecutionPlaneRoleArn"},""]}]}` {
		v = append(v, "condition HasExecutionPlaneRole "+c)
	}
	v = append(v, judgeEnvironmentKey(resources, plane)...)
	v = append(v, judgeTokenKey(resources)...)
	v = append(v, rolePolicyUses(resources)...)
	slices.Sort(v)
	return v
}

// judgeEnvironmentKey judges EnvironmentSecretsKey's policy (judgeSecretsKeys).
func judgeEnvironmentKey(resources map[string]any, plane bool) []string {
	var v []string
	var encrypts, decrypts bool
	for _, st := range list(dig(resources, "EnvironmentSecretsKey", "Properties", "KeyPolicy", "Statement")) {
		if when := list(dig(st, "Fn::If")); len(when) == 3 {
			if when[0] != "HasExecutionPlaneRole" {
				v = append(v, fmt.Sprintf("EnvironmentSecretsKey: a statement on the condition %v", when[0]))
			}
			if st = when[2]; plane {
				st = when[1]
			}
			if dig(st, "Ref") == "AWS::NoValue" {
				continue
			}
		}
		who, actions := principals(st), list(dig(st, "Action"))
		uses := usesOf(st)
		switch cond := testkit.JSON(dig(st, "Condition")); {
		case dig(st, "Effect") == "Deny":
		case dig(st, "NotAction") != nil || dig(st, "NotPrincipal") != nil:
			v = append(v, "EnvironmentSecretsKey: a statement with NotAction or NotPrincipal: "+testkit.JSON(st))
		case slices.Equal(who, []string{accountRoot}) && len(uses) == 0:
		case slices.Equal(who, []string{environmentsRole}) && slices.Equal(actions, []any{"kms:Encrypt"}) && cond == environmentContext:
			encrypts = true
		case plane && slices.Equal(who, []string{executionPlane}) && slices.Equal(actions, []any{"kms:Decrypt"}) && cond == environmentContext:
			decrypts = true
		default:
			v = append(v, fmt.Sprintf("EnvironmentSecretsKey: %s may %v: %s", strings.Join(who, ", "), uses, testkit.JSON(st)))
		}
	}
	if !encrypts {
		v = append(v, "EnvironmentSecretsKey: EnvironmentsFunction's role may not kms:Encrypt under an environment's context")
	}
	if plane && !decrypts {
		v = append(v, "EnvironmentSecretsKey: the execution plane's role may not kms:Decrypt under an environment's context")
	}
	return v
}

// judgeTokenKey reports what SessionTokenKey is not: an HMAC_256 key for
// GENERATE_VERIFY_MAC, retained when the stack is deleted or the key
// replaced (a new key ends every session's token), whose policy holds
// the account's administration (no use of keyUses) and kms:GenerateMac
// to the tokenRoles, each alone in its statement, and nothing else.
func judgeTokenKey(resources map[string]any) []string {
	var v []string
	key, _ := resources["SessionTokenKey"].(map[string]any)
	for k, want := range map[string]string{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"} {
		if key[k] != want {
			v = append(v, fmt.Sprintf("SessionTokenKey: %s %v, want %s", k, key[k], want))
		}
	}
	for k, want := range map[string]string{"KeySpec": "HMAC_256", "KeyUsage": "GENERATE_VERIFY_MAC"} {
		if got := dig(key, "Properties", k); got != want {
			v = append(v, fmt.Sprintf("SessionTokenKey: %s %v, want %s", k, got, want))
		}
	}
	var derivers []string
	for _, st := range list(dig(key, "Properties", "KeyPolicy", "Statement")) {
		who, actions, uses := principals(st), list(dig(st, "Action")), usesOf(st)
		switch {
		case dig(st, "Effect") == "Deny":
		case dig(st, "NotAction") != nil || dig(st, "NotPrincipal") != nil:
			v = append(v, "SessionTokenKey: a statement with NotAction or NotPrincipal: "+testkit.JSON(st))
		case slices.Equal(who, []string{accountRoot}) && len(uses) == 0:
		case len(who) == 1 && slices.Contains(tokenRoles, who[0]) && slices.Equal(actions, []any{"kms:GenerateMac"}) && dig(st, "Resource") == "*" && dig(st, "Condition") == nil:
			derivers = append(derivers, who[0])
		default:
			v = append(v, fmt.Sprintf("SessionTokenKey: %s may %v: %s", strings.Join(who, ", "), uses, testkit.JSON(st)))
		}
	}
	slices.Sort(derivers)
	if !slices.Contains(derivers, tokenRoles[1]) {
		v = append(v, "SessionTokenKey: the session events function's role may not kms:GenerateMac")
	}
	if !slices.Contains(derivers, tokenRoles[0]) {
		v = append(v, "SessionTokenKey: the runtime function's role may not kms:GenerateMac")
	}
	if !slices.Equal(slices.Compact(derivers), derivers) {
		v = append(v, fmt.Sprintf("SessionTokenKey: kms:GenerateMac granted twice to one role: %v", derivers))
	}
	return v
}

// rolePolicyUses judges the uses of keys that role policies allow
// (judgeSecretsKeys).
func rolePolicyUses(resources map[string]any) []string {
	var v, hooks, macs []string
	for id, r := range resources {
		var docs []any
		switch dig(r, "Type") {
		case "AWS::IAM::Role":
			for _, p := range list(dig(r, "Properties", "Policies")) {
				docs = append(docs, dig(p, "PolicyDocument"))
			}
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy":
			docs = append(docs, dig(r, "Properties", "PolicyDocument"))
		}
		for _, doc := range docs {
			for _, st := range list(dig(doc, "Statement")) {
				uses := usesOf(st)
				if dig(st, "Effect") != "Allow" || len(uses) == 0 {
					continue
				}
				for _, res := range list(dig(st, "Resource")) {
					switch text := policyText(res); {
					case strings.Contains(text, "*") || references(res, "EnvironmentSecretsKey") || references(res, "SessionTokenKey"):
						v = append(v, fmt.Sprintf("%s may %s on %s", id, strings.Join(uses, ", "), text))
					case references(res, "WebhookSecretsKey") && testkit.JSON(dig(st, "Condition")) != triggerContext:
						v = append(v, fmt.Sprintf("%s %s on WebhookSecretsKey without a trigger's context: %s", id, strings.Join(uses, ", "), testkit.JSON(st)))
					case references(res, "WebhookSecretsKey"):
						for _, u := range uses {
							hooks = append(hooks, id+" "+u)
						}
					case references(res, "WebhookKey"):
						for _, u := range uses {
							macs = append(macs, id+" "+u)
						}
					}
				}
			}
		}
	}
	if slices.Sort(hooks); !slices.Equal(hooks, webhookGrants) {
		v = append(v, fmt.Sprintf("the grants of WebhookSecretsKey under a trigger's context are %v, want %v", hooks, webhookGrants))
	}
	if slices.Sort(macs); !slices.Equal(macs, macGrants) {
		v = append(v, fmt.Sprintf("the grants of WebhookKey are %v, want %v", macs, macGrants))
	}
	return v
}

// principals are a statement's principals as text: "*" for everyone.
func principals(st any) []string {
	p := dig(st, "Principal")
	if p == "*" {
		return []string{"*"}
	}
	var out []string
	m, _ := p.(map[string]any)
	for _, kind := range []string{"AWS", "Service", "Federated", "CanonicalUser"} {
		for _, id := range list(m[kind]) {
			out = append(out, policyText(id))
		}
	}
	return out
}

// usesOf are the keyUses that a statement's actions allow, wildcards
// matched as IAM does (without regard to case).
func usesOf(st any) []string {
	var uses []string
	for _, u := range keyUses {
		if slices.ContainsFunc(list(dig(st, "Action")), func(a any) bool {
			ok, _ := path.Match(strings.ToLower(fmt.Sprint(a)), strings.ToLower(u))
			return ok
		}) {
			uses = append(uses, u)
		}
	}
	return uses
}
