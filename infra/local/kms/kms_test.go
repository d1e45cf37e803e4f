package kms

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"

	"github.com/cloud-agent/control-plane/infra/local/motoserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	motoserver.Stop()
	os.Exit(code)
}

// otherKey is a second symmetric key, for the tests that need a
// ciphertext of another key than WebhookSecretsKey.
var otherKey = Spec{LogicalID: "OtherKey", KeySpec: SpecSymmetric, KeyUsage: UsageEncrypt, Env: "OTHER_KEY_ID"}

// serve serves a stand-in with the keys of Specs and otherKey, and gives
// a client of it.
func serve(t *testing.T) (*Keys, *awskms.Client) {
	t.Helper()
	ks, err := generate(append(append([]Spec{}, Specs...), otherKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Server{Keys: ks})
	t.Cleanup(srv.Close)
	return ks, Client(srv.URL)
}

// refusal is an SDK error's code and HTTP status.
func refusal(err error) (string, int) {
	var api smithy.APIError
	var resp *awshttp.ResponseError
	code, status := "", 0
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	if errors.As(err, &resp) {
		status = resp.HTTPStatusCode()
	}
	return code, status
}

// TestGenerateMac: GenerateMac is HMAC-SHA256 (RFC 2104) of the message
// under WebhookKey's material: 32 bytes, the same for the same message
// whichever way the key is named, another for another message; the answer
// names the key by its ARN.
func TestGenerateMac(t *testing.T) {
	ks, c := serve(t)
	k := ks.Key("WebhookKey")
	msg := []byte("webhook:trg_0b0f5d3e-6f7a-4c1e-9d8b-2a7c4e6f8a90:1")
	want := hmac.New(sha256.New, k.Material)
	want.Write(msg)
	for _, id := range []string{k.KeyID, k.ARN(), k.Alias(), "arn:aws:kms:" + Region + ":" + Account + ":" + k.Alias()} {
		out, err := c.GenerateMac(context.Background(), &awskms.GenerateMacInput{KeyId: aws.String(id), Message: msg, MacAlgorithm: types.MacAlgorithmSpecHmacSha256})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if len(out.Mac) != 32 || !hmac.Equal(out.Mac, want.Sum(nil)) {
			t.Errorf("%s: a MAC of %d bytes, %x; want %x", id, len(out.Mac), out.Mac, want.Sum(nil))
		}
		if aws.ToString(out.KeyId) != k.ARN() || out.MacAlgorithm != types.MacAlgorithmSpecHmacSha256 {
			t.Errorf("%s: answered key %s, algorithm %s", id, aws.ToString(out.KeyId), out.MacAlgorithm)
		}
	}
	other, err := c.GenerateMac(context.Background(), &awskms.GenerateMacInput{KeyId: aws.String(k.KeyID), Message: []byte("webhook:trg_x:2"), MacAlgorithm: types.MacAlgorithmSpecHmacSha256})
	if err != nil || hmac.Equal(other.Mac, want.Sum(nil)) {
		t.Errorf("another message: %x %v", other.Mac, err)
	}
}

// TestEncryptDecrypt: a secret encrypted under WebhookSecretsKey with the
// trigger id as encryption context decrypts with that context, with or
// without KeyId (the blob names its key); any other context, none, or a
// blob changed in any byte is InvalidCiphertext; a KeyId that names
// another key than the blob's is IncorrectKey.
func TestEncryptDecrypt(t *testing.T) {
	ks, c := serve(t)
	ctx := context.Background()
	k := ks.Key("WebhookSecretsKey")
	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	ec := map[string]string{"triggerId": "trg_0b0f5d3e-6f7a-4c1e-9d8b-2a7c4e6f8a90"}
	enc, err := c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(k.Alias()), Plaintext: secret, EncryptionContext: ec})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(enc.KeyId) != k.ARN() || enc.EncryptionAlgorithm != types.EncryptionAlgorithmSpecSymmetricDefault || bytes.Contains(enc.CiphertextBlob, secret) {
		t.Errorf("Encrypt answered %+v", enc)
	}
	again, err := c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(k.KeyID), Plaintext: secret, EncryptionContext: ec})
	if err != nil || bytes.Equal(again.CiphertextBlob, enc.CiphertextBlob) {
		t.Errorf("two encryptions of one secret gave one blob: %v", err)
	}
	for _, keyID := range []*string{nil, aws.String(k.KeyID), aws.String(k.ARN()), aws.String(k.Alias())} {
		dec, err := c.Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: enc.CiphertextBlob, EncryptionContext: ec, KeyId: keyID})
		if err != nil {
			t.Fatalf("KeyId %v: %v", aws.ToString(keyID), err)
		}
		if !bytes.Equal(dec.Plaintext, secret) || aws.ToString(dec.KeyId) != k.ARN() || dec.EncryptionAlgorithm != types.EncryptionAlgorithmSpecSymmetricDefault {
			t.Errorf("KeyId %v: %q from %s", aws.ToString(keyID), dec.Plaintext, aws.ToString(dec.KeyId))
		}
	}
	changed := func(i int) []byte {
		b := bytes.Clone(enc.CiphertextBlob)
		b[i] ^= 1
		return b
	}
	otherBlob, err := c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(ks.Key(otherKey.LogicalID).KeyID), Plaintext: secret, EncryptionContext: ec})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		blob    []byte
		context map[string]string
		keyID   string
		want    string
	}{
		{"another trigger's context", enc.CiphertextBlob, map[string]string{"triggerId": "trg_other"}, "", errInvalidCiphertext},
		{"no context", enc.CiphertextBlob, nil, "", errInvalidCiphertext},
		{"the context in another case", enc.CiphertextBlob, map[string]string{"triggerid": ec["triggerId"]}, "", errInvalidCiphertext},
		{"a pair more", enc.CiphertextBlob, map[string]string{"triggerId": ec["triggerId"], "x": "y"}, "", errInvalidCiphertext},
		{"the version changed", changed(0), ec, "", errInvalidCiphertext},
		{"the key id changed", changed(5), ec, "", errInvalidCiphertext},
		{"the nonce changed", changed(headerLength + 1), ec, "", errInvalidCiphertext},
		{"the sealed part changed", changed(len(enc.CiphertextBlob) - 1), ec, "", errInvalidCiphertext},
		{"cut short", enc.CiphertextBlob[:minCiphertext-1], ec, "", errInvalidCiphertext},
		{"not a blob of ours", []byte("AQICAHh-this-is-not-ours"), ec, "", errInvalidCiphertext},
		{"another key's blob, this KeyId", otherBlob.CiphertextBlob, ec, k.KeyID, errIncorrectKey},
		{"this blob, another symmetric key's KeyId", enc.CiphertextBlob, ec, ks.Key(otherKey.LogicalID).ARN(), errIncorrectKey},
		{"the HMAC key's KeyId", enc.CiphertextBlob, ec, ks.Key("WebhookKey").KeyID, errInvalidKeyUsage},
	} {
		in := &awskms.DecryptInput{CiphertextBlob: tc.blob, EncryptionContext: tc.context}
		if tc.keyID != "" {
			in.KeyId = aws.String(tc.keyID)
		}
		_, err := c.Decrypt(ctx, in)
		if code, status := refusal(err); code != tc.want || status != statuses[tc.want] {
			t.Errorf("%s: %s %d (%v), want %s", tc.name, code, status, err, tc.want)
		}
	}
	var typed *types.InvalidCiphertextException
	if _, err := c.Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: enc.CiphertextBlob}); !errors.As(err, &typed) {
		t.Errorf("the SDK does not read a refusal as its InvalidCiphertextException: %T %v", err, err)
	}
}

// TestRefusals: through the SDK, each refusal is the error KMS answers,
// with its status, which the SDK reads as its typed error.
func TestRefusals(t *testing.T) {
	ks, c := serve(t)
	ctx := context.Background()
	mac, sym := ks.Key("WebhookKey"), ks.Key("WebhookSecretsKey")
	generate := func(keyID string, alg types.MacAlgorithmSpec, dry bool) error {
		_, err := c.GenerateMac(ctx, &awskms.GenerateMacInput{KeyId: aws.String(keyID), Message: []byte("m"), MacAlgorithm: alg, DryRun: aws.Bool(dry)})
		return err
	}
	encrypt := func(keyID string, plaintext []byte, alg types.EncryptionAlgorithmSpec) error {
		_, err := c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(keyID), Plaintext: plaintext, EncryptionAlgorithm: alg})
		return err
	}
	blob, err := c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(sym.KeyID), Plaintext: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"GenerateMac with the symmetric key", generate(sym.KeyID, types.MacAlgorithmSpecHmacSha256, false), errInvalidKeyUsage},
		{"GenerateMac with HMAC_SHA_384 on an HMAC_256 key", generate(mac.KeyID, types.MacAlgorithmSpecHmacSha384, false), errInvalidKeyUsage},
		{"GenerateMac with an unknown MacAlgorithm", generate(mac.KeyID, "HMAC_MD5", false), errValidation},
		{"GenerateMac with an unknown key id", generate("1234abcd-12ab-34cd-56ef-1234567890ab", types.MacAlgorithmSpecHmacSha256, false), errNotFound},
		{"GenerateMac with an unknown alias", generate("alias/NoSuchKey", types.MacAlgorithmSpecHmacSha256, false), errNotFound},
		{"GenerateMac with the key's ARN in another account", generate("arn:aws:kms:"+Region+":111122223333:key/"+mac.KeyID, types.MacAlgorithmSpecHmacSha256, false), errNotFound},
		{"GenerateMac with the key's ARN in another region", generate("arn:aws:kms:eu-west-1:"+Account+":key/"+mac.KeyID, types.MacAlgorithmSpecHmacSha256, false), errNotFound},
		{"GenerateMac with the logical id alone", generate("WebhookKey", types.MacAlgorithmSpecHmacSha256, false), errNotFound},
		{"GenerateMac as a dry run", generate(mac.KeyID, types.MacAlgorithmSpecHmacSha256, true), errDryRun},
		{"Encrypt with the HMAC key", encrypt(mac.KeyID, []byte("p"), ""), errInvalidKeyUsage},
		{"Encrypt with RSAES_OAEP_SHA_256 on a symmetric key", encrypt(sym.KeyID, []byte("p"), types.EncryptionAlgorithmSpecRsaesOaepSha256), errInvalidKeyUsage},
		{"Encrypt of 4,097 bytes", encrypt(sym.KeyID, make([]byte, 4097), ""), errValidation},
		{"Encrypt with an unknown key", encrypt("alias/aws/nothing", []byte("p"), ""), errNotFound},
		{"Decrypt with RSAES_OAEP_SHA_1", func() error {
			_, err := c.Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: blob.CiphertextBlob, EncryptionAlgorithm: types.EncryptionAlgorithmSpecRsaesOaepSha1})
			return err
		}(), errInvalidKeyUsage},
		{"Decrypt as a dry run", func() error {
			_, err := c.Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: blob.CiphertextBlob, DryRun: aws.Bool(true)})
			return err
		}(), errDryRun},
		{"Decrypt as a dry run of a bad blob", func() error {
			_, err := c.Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: []byte("nonsense"), DryRun: aws.Bool(true)})
			return err
		}(), errInvalidCiphertext},
		{"DescribeKey of an unknown alias", func() error {
			_, err := c.DescribeKey(ctx, &awskms.DescribeKeyInput{KeyId: aws.String("alias/WebhookKeys")})
			return err
		}(), errNotFound},
	} {
		if code, status := refusal(tc.err); code != tc.want || status != statuses[tc.want] {
			t.Errorf("%s: %s %d (%v), want %s %d", tc.name, code, status, tc.err, tc.want, statuses[tc.want])
		}
	}
	var notFound *types.NotFoundException
	if !errors.As(generate("alias/NoSuchKey", types.MacAlgorithmSpecHmacSha256, false), &notFound) {
		t.Error("the SDK does not read NotFoundException as its own")
	}
	var usage *types.InvalidKeyUsageException
	if !errors.As(encrypt(mac.KeyID, []byte("p"), ""), &usage) {
		t.Error("the SDK does not read InvalidKeyUsageException as its own")
	}
}

// TestDescribeKey: each key's metadata, as KMS describes a customer's key
// of its kind.
func TestDescribeKey(t *testing.T) {
	ks, c := serve(t)
	for _, sp := range Specs {
		k := ks.Key(sp.LogicalID)
		out, err := c.DescribeKey(context.Background(), &awskms.DescribeKeyInput{KeyId: aws.String(k.Alias())})
		if err != nil {
			t.Fatal(err)
		}
		m := out.KeyMetadata
		if aws.ToString(m.KeyId) != k.KeyID || aws.ToString(m.Arn) != k.ARN() || aws.ToString(m.AWSAccountId) != Account ||
			string(m.KeySpec) != sp.KeySpec || string(m.KeyUsage) != sp.KeyUsage || !m.Enabled || m.KeyState != types.KeyStateEnabled ||
			m.KeyManager != types.KeyManagerTypeCustomer || !aws.ToTime(m.CreationDate).Equal(k.Created) {
			t.Errorf("%s: %+v", sp.LogicalID, m)
		}
		if sp.KeySpec == SpecHMAC256 && (len(m.MacAlgorithms) != 1 || m.MacAlgorithms[0] != types.MacAlgorithmSpecHmacSha256 || m.EncryptionAlgorithms != nil) {
			t.Errorf("%s: MAC algorithms %v, encryption algorithms %v", sp.LogicalID, m.MacAlgorithms, m.EncryptionAlgorithms)
		}
		if sp.KeySpec == SpecSymmetric && (len(m.EncryptionAlgorithms) != 1 || m.EncryptionAlgorithms[0] != types.EncryptionAlgorithmSpecSymmetricDefault || m.MacAlgorithms != nil) {
			t.Errorf("%s: MAC algorithms %v, encryption algorithms %v", sp.LogicalID, m.MacAlgorithms, m.EncryptionAlgorithms)
		}
	}
}

// post sends a raw request to the stand-in and decodes the answer.
func post(t *testing.T, url, target, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	if target != "" {
		req.Header.Set("X-Amz-Target", target)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		t.Errorf("Content-Type %q", ct)
	}
	if resp.Header.Get("X-Amzn-Requestid") == "" {
		t.Error("no request id")
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("the answer is not a JSON object: %v", err)
	}
	return resp.StatusCode, out
}

// TestWire: what the SDK never sends (it checks required members itself)
// is refused as KMS refuses it, on the wire: a missing or empty member, a
// member named in another case (KMS matches names exactly, and ignores
// names it does not know), a body that is not the input's JSON, another
// call.
func TestWire(t *testing.T) {
	ks, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Server{Keys: ks})
	defer srv.Close()
	mac := ks.Key("WebhookKey").KeyID
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name, target, body string
		status             int
		typ, message       string
	}{
		{"no KeyId", "GenerateMac", `{"Message":"bQ==","MacAlgorithm":"HMAC_SHA_256"}`, 400, errValidation,
			"1 validation error detected: Value null at 'keyId' failed to satisfy constraint: Member must not be null"},
		{"KeyId null", "GenerateMac", `{"KeyId":null,"Message":"bQ==","MacAlgorithm":"HMAC_SHA_256"}`, 400, errValidation, "Value null at 'keyId'"},
		{"keyid in lower case", "GenerateMac", `{"keyid":"` + mac + `","Message":"bQ==","MacAlgorithm":"HMAC_SHA_256"}`, 400, errValidation, "Value null at 'keyId'"},
		{"an empty KeyId", "GenerateMac", `{"KeyId":"","Message":"bQ==","MacAlgorithm":"HMAC_SHA_256"}`, 400, errValidation,
			"Member must have length greater than or equal to 1"},
		{"an empty Message", "GenerateMac", `{"KeyId":"` + mac + `","Message":"","MacAlgorithm":"HMAC_SHA_256"}`, 400, errValidation,
			"Value at 'message' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"a Message of 4,097 bytes", "GenerateMac", `{"KeyId":"` + mac + `","Message":"` + b64(make([]byte, 4097)) + `","MacAlgorithm":"HMAC_SHA_256"}`, 400, errValidation,
			"Member must have length less than or equal to 4096"},
		{"nothing at all", "GenerateMac", `{}`, 400, errValidation, "3 validation errors detected: "},
		{"an empty body", "Encrypt", ``, 400, errValidation, "2 validation errors detected: "},
		{"11 grant tokens", "GenerateMac", `{"KeyId":"` + mac + `","Message":"bQ==","MacAlgorithm":"HMAC_SHA_256","GrantTokens":["a","a","a","a","a","a","a","a","a","a","a"]}`, 400, errValidation,
			"at 'grantTokens' failed to satisfy constraint"},
		{"a member of another type", "GenerateMac", `{"KeyId":5}`, 400, errSerialization, ""},
		{"a Message that is not base64", "GenerateMac", `{"KeyId":"` + mac + `","Message":"not base64!","MacAlgorithm":"HMAC_SHA_256"}`, 400, errSerialization, ""},
		{"not JSON", "Decrypt", `{"CiphertextBlob":`, 400, errSerialization, ""},
		{"an array", "Decrypt", `[]`, 400, errSerialization, ""},
		{"Decrypt without a blob", "Decrypt", `{}`, 400, errValidation, "Value null at 'ciphertextBlob'"},
		{"a blob of 6,145 bytes", "Decrypt", `{"CiphertextBlob":"` + b64(make([]byte, 6145)) + `"}`, 400, errValidation,
			"Member must have length less than or equal to 6144"},
		{"a dry run that ignores the blob", "Decrypt", `{"DryRun":true,"DryRunModifiers":["IGNORE_CIPHERTEXT"],"KeyId":"alias/WebhookSecretsKey"}`, 412, errDryRun, "DryRun"},
		{"an unknown dry-run modifier", "Decrypt", `{"CiphertextBlob":"AA==","DryRunModifiers":["IGNORE_ALL"]}`, 400, errValidation, "dryRunModifiers.1.member"},
		{"VerifyMac", "VerifyMac", `{}`, 400, errUnknownOperation, ""},
		{"no target", "", `{}`, 400, errUnknownOperation, ""},
	} {
		target := tc.target
		if target != "" {
			target = targetPrefix + target
		}
		status, out := post(t, srv.URL, target, tc.body)
		msg, _ := out["message"].(string)
		if status != tc.status || out["__type"] != tc.typ || !strings.Contains(msg, tc.message) {
			t.Errorf("%s: %d %v, want %d %s %q", tc.name, status, out, tc.status, tc.typ, tc.message)
		}
	}
	big := `{"KeyId":"` + mac + `","Message":"bQ==","MacAlgorithm":"HMAC_SHA_256","GrantTokens":["` + strings.Repeat("a", maxBody) + `"]}`
	if status, out := post(t, srv.URL, targetPrefix+"GenerateMac", big); status != 413 || out["__type"] != errTooLarge {
		t.Errorf("a body over the limit: %d %v", status, out)
	}
	status, out := post(t, srv.URL, targetPrefix+"GenerateMac", `{"KeyId":"alias/WebhookKey","Message":"bQ==","MacAlgorithm":"HMAC_SHA_256","Unknown":1}`)
	if status != 200 || out["KeyId"] != ks.Key("WebhookKey").ARN() {
		t.Errorf("a member KMS does not know: %d %v", status, out)
	}
}
