package kms

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/local/motoserver"
)

// witness is a KMS endpoint with an HMAC_256 key, two symmetric keys and
// an alias of the HMAC key.
type witness struct {
	c                *awskms.Client
	mac, sym, other  string // key ids
	macAlias, macARN string
	symARN           string
}

func localWitness(t *testing.T) witness {
	ks, c := serve(t)
	mac, sym := ks.Key("WebhookKey"), ks.Key("WebhookSecretsKey")
	return witness{c: c, mac: mac.KeyID, sym: sym.KeyID, other: ks.Key(otherKey.LogicalID).KeyID,
		macAlias: mac.Alias(), macARN: mac.ARN(), symARN: sym.ARN()}
}

// motoWitness makes the same keys on moto's KMS; the alias has a name of
// its own for each test run, as moto keeps its keys while the test binary
// runs.
func motoWitness(t *testing.T) witness {
	c := awskms.New(awskms.Options{Region: Region, BaseEndpoint: aws.String(motoserver.URL(t)),
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
	ctx := context.Background()
	create := func(spec types.KeySpec, usage types.KeyUsageType) *types.KeyMetadata {
		out, err := c.CreateKey(ctx, &awskms.CreateKeyInput{KeySpec: spec, KeyUsage: usage})
		if err != nil {
			t.Fatalf("moto CreateKey %s: %v", spec, err)
		}
		return out.KeyMetadata
	}
	mac := create(types.KeySpecHmac256, types.KeyUsageTypeGenerateVerifyMac)
	sym := create(types.KeySpecSymmetricDefault, types.KeyUsageTypeEncryptDecrypt)
	other := create(types.KeySpecSymmetricDefault, types.KeyUsageTypeEncryptDecrypt)
	alias := "alias/WebhookKey-" + uuid.NewString()[:8]
	if _, err := c.CreateAlias(ctx, &awskms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: mac.KeyId}); err != nil {
		t.Fatalf("moto CreateAlias: %v", err)
	}
	return witness{c: c, mac: aws.ToString(mac.KeyId), sym: aws.ToString(sym.KeyId), other: aws.ToString(other.KeyId),
		macAlias: alias, macARN: aws.ToString(mac.Arn), symARN: aws.ToString(sym.Arn)}
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	code, _ := refusal(err)
	if code == "" {
		return err.Error()
	}
	return code
}

// TestAgainstMoto: the calls the functions make answer on moto's KMS as
// on the stand-in, where moto does as the KMS API reference says. Where
// moto does not, the case says what moto answers and why the stand-in
// keeps to the reference.
func TestAgainstMoto(t *testing.T) {
	ctx := context.Background()
	msg := []byte("webhook:trg_0b0f5d3e-6f7a-4c1e-9d8b-2a7c4e6f8a90:1")
	ec := map[string]string{"triggerId": "trg_0b0f5d3e-6f7a-4c1e-9d8b-2a7c4e6f8a90"}
	gen := func(w witness, keyID string, alg types.MacAlgorithmSpec) (*awskms.GenerateMacOutput, error) {
		return w.c.GenerateMac(ctx, &awskms.GenerateMacInput{KeyId: aws.String(keyID), Message: msg, MacAlgorithm: alg})
	}
	encrypt := func(w witness) []byte {
		out, err := w.c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(w.sym), Plaintext: []byte("whsec_secret"), EncryptionContext: ec})
		if err != nil {
			t.Fatalf("Encrypt: %v", err)
		}
		return out.CiphertextBlob
	}
	decrypt := func(w witness, blob []byte, context map[string]string, keyID *string) string {
		out, err := w.c.Decrypt(ctx, &awskms.DecryptInput{CiphertextBlob: blob, EncryptionContext: context, KeyId: keyID})
		if err != nil {
			return outcome(err)
		}
		return fmt.Sprintf("%s from %v", out.Plaintext, aws.ToString(out.KeyId) == w.symARN)
	}
	cases := []struct {
		name string
		run  func(w witness) string
		want string
		// moto is moto's answer where it is not the reference's.
		moto string
	}{
		{"GenerateMac twice over one message", func(w witness) string {
			a, err := gen(w, w.mac, types.MacAlgorithmSpecHmacSha256)
			if err != nil {
				return outcome(err)
			}
			b, err := gen(w, w.mac, types.MacAlgorithmSpecHmacSha256)
			if err != nil {
				return outcome(err)
			}
			return fmt.Sprintf("%d bytes, stable %v", len(a.Mac), bytes.Equal(a.Mac, b.Mac))
		}, "32 bytes, stable true", ""},
		{"GenerateMac by alias, by ARN and by key id", func(w witness) string {
			var macs [][]byte
			for _, id := range []string{w.mac, w.macAlias, w.macARN} {
				out, err := gen(w, id, types.MacAlgorithmSpecHmacSha256)
				if err != nil {
					return id + ": " + outcome(err)
				}
				macs = append(macs, out.Mac)
			}
			return fmt.Sprint(bytes.Equal(macs[0], macs[1]) && bytes.Equal(macs[0], macs[2]))
		}, "true", ""},
		// The reference: GenerateMac's KeyId is "the HMAC KMS key used in
		// the operation", its key ARN, as every call answers it; moto
		// answers the key id.
		{"GenerateMac answers the key's ARN", func(w witness) string {
			out, err := gen(w, w.mac, types.MacAlgorithmSpecHmacSha256)
			if err != nil {
				return outcome(err)
			}
			return fmt.Sprint(aws.ToString(out.KeyId) == w.macARN)
		}, "true", "false"},
		{"GenerateMac with the symmetric key", func(w witness) string {
			_, err := gen(w, w.sym, types.MacAlgorithmSpecHmacSha256)
			return outcome(err)
		}, errInvalidKeyUsage, ""},
		// The reference: the algorithm "must be compatible with the HMAC KMS
		// key", and an HMAC_256 key's MacAlgorithms are HMAC_SHA_256 alone;
		// moto computes any.
		{"GenerateMac with HMAC_SHA_384 on an HMAC_256 key", func(w witness) string {
			_, err := gen(w, w.mac, types.MacAlgorithmSpecHmacSha384)
			return outcome(err)
		}, errInvalidKeyUsage, "ok"},
		{"GenerateMac with an unknown key", func(w witness) string {
			_, err := gen(w, "1234abcd-12ab-34cd-56ef-1234567890ab", types.MacAlgorithmSpecHmacSha256)
			return outcome(err)
		}, errNotFound, ""},
		{"GenerateMac with an unknown alias", func(w witness) string {
			_, err := gen(w, "alias/NoSuchKey", types.MacAlgorithmSpecHmacSha256)
			return outcome(err)
		}, errNotFound, ""},
		{"Decrypt with the context", func(w witness) string {
			return decrypt(w, encrypt(w), ec, aws.String(w.sym))
		}, "whsec_secret from true", ""},
		{"Decrypt without KeyId", func(w witness) string {
			return decrypt(w, encrypt(w), ec, nil)
		}, "whsec_secret from true", ""},
		{"Decrypt with another trigger's context", func(w witness) string {
			return decrypt(w, encrypt(w), map[string]string{"triggerId": "trg_other"}, aws.String(w.sym))
		}, errInvalidCiphertext, ""},
		{"Decrypt without the context", func(w witness) string {
			return decrypt(w, encrypt(w), nil, nil)
		}, errInvalidCiphertext, ""},
		{"Decrypt of a blob changed in its last byte", func(w witness) string {
			blob := encrypt(w)
			blob[len(blob)-1] ^= 1
			return decrypt(w, blob, ec, nil)
		}, errInvalidCiphertext, ""},
		// The reference: "If the ciphertext was encrypted under a different
		// KMS key, the Decrypt operation fails" with IncorrectKeyException;
		// moto answers AccessDeniedException.
		{"Decrypt with another symmetric key's KeyId", func(w witness) string {
			return decrypt(w, encrypt(w), ec, aws.String(w.other))
		}, errIncorrectKey, "AccessDeniedException"},
		// The reference (InvalidKeyUsageException): "For encrypting,
		// decrypting, re-encrypting, and generating data keys, the KeyUsage
		// must be ENCRYPT_DECRYPT"; moto encrypts under an HMAC key.
		{"Encrypt with the HMAC key", func(w witness) string {
			_, err := w.c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(w.mac), Plaintext: []byte("p")})
			return outcome(err)
		}, errInvalidKeyUsage, "ok"},
		{"Encrypt of 4,097 bytes", func(w witness) string {
			_, err := w.c.Encrypt(ctx, &awskms.EncryptInput{KeyId: aws.String(w.sym), Plaintext: make([]byte, 4097)})
			return outcome(err)
		}, errValidation, ""},
		// The reference (KeyMetadata): MacAlgorithms, "the MAC algorithms
		// that the HMAC KMS key supports", present when the KeyUsage is
		// GENERATE_VERIFY_MAC; moto leaves them out.
		{"DescribeKey by alias", func(w witness) string {
			out, err := w.c.DescribeKey(ctx, &awskms.DescribeKeyInput{KeyId: aws.String(w.macAlias)})
			if err != nil {
				return outcome(err)
			}
			m := out.KeyMetadata
			return strings.Join([]string{string(m.KeySpec), string(m.KeyUsage), fmt.Sprint(m.MacAlgorithms)}, " ")
		}, "HMAC_256 GENERATE_VERIFY_MAC [HMAC_SHA_256]", "HMAC_256 GENERATE_VERIFY_MAC []"},
	}
	local := localWitness(t)
	t.Run("local", func(t *testing.T) {
		for _, tc := range cases {
			if got := tc.run(local); got != tc.want {
				t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
			}
		}
	})
	t.Run("moto", func(t *testing.T) {
		moto := motoWitness(t)
		for _, tc := range cases {
			want := tc.want
			if tc.moto != "" {
				want = tc.moto
			}
			if got := tc.run(moto); got != want {
				t.Errorf("%s: moto answers %s, want %s", tc.name, got, want)
			}
		}
	})
}
