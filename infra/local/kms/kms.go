// Package kms stands in for AWS KMS locally: Server answers the calls the
// functions make (GenerateMac, Encrypt, Decrypt, and DescribeKey) over
// KMS's JSON protocol, as KMS answers them, with the keys of Specs
// (WebhookKey, an HMAC_256 key; WebhookSecretsKey, a symmetric one). Open
// keeps the keys in a file, made with crypto/rand on the first run and
// read on the next, so that what they derive survives a restart; Client is
// a client of the stand-in. For development and tests only.
package kms

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json/v2"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/google/uuid"
)

// targetPrefix is KMS's X-Amz-Target prefix (its Smithy service name).
const targetPrefix = "TrentService."

// maxBody is the stand-in's own bound on a request body: every valid
// request of the calls it serves is far smaller (4,096 bytes of message or
// plaintext, 6,144 of ciphertext), but for a large encryption context.
const maxBody = 1 << 20

// The limits of KMS's model on the members the stand-in reads.
const (
	maxKeyID      = 2048
	maxPlaintext  = 4096
	maxCiphertext = 6144
)

// Algorithms, as KMS's enums list them.
var (
	macAlgorithms        = []string{"HMAC_SHA_224", "HMAC_SHA_256", "HMAC_SHA_384", "HMAC_SHA_512"}
	encryptionAlgorithms = []string{"SYMMETRIC_DEFAULT", "RSAES_OAEP_SHA_1", "RSAES_OAEP_SHA_256", "SM2PKE"}
	dryRunModifiers      = []string{"IGNORE_CIPHERTEXT"}
)

// Server answers KMS's JSON protocol (X-Amz-Target: TrentService.<call>)
// from Keys, for GenerateMac, Encrypt, Decrypt and DescribeKey; any other
// call is an UnknownOperationException. It keeps no state of its own:
// requests are answered concurrently.
type Server struct {
	Keys *Keys
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	status, out := 0, []byte(nil)
	if err != nil {
		status, out = answerError(fail(errTooLarge, "the request body is over %d bytes, the local stand-in's limit", maxBody))
	} else {
		status, out = s.Answer(r.Header.Get("X-Amz-Target"), body)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", uuid.NewString())
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// Answer answers one request, given its X-Amz-Target and its body: the
// HTTP status and the JSON body, an error as {"__type", "message"}.
func (s *Server) Answer(target string, body []byte) (int, []byte) {
	var out any
	var err *apiError
	switch target {
	case targetPrefix + "GenerateMac":
		out, err = call(body, s.generateMac)
	case targetPrefix + "Encrypt":
		out, err = call(body, s.encrypt)
	case targetPrefix + "Decrypt":
		out, err = call(body, s.decrypt)
	case targetPrefix + "DescribeKey":
		out, err = call(body, s.describeKey)
	default:
		err = fail(errUnknownOperation, "only GenerateMac, Encrypt, Decrypt and DescribeKey are served locally")
	}
	if err != nil {
		return answerError(err)
	}
	data, merr := json.Marshal(out)
	if merr != nil {
		return answerError(fail(errInternal, "%v", merr))
	}
	return http.StatusOK, data
}

func answerError(e *apiError) (int, []byte) {
	data, _ := json.Marshal(map[string]string{"__type": e.typ, "message": e.msg})
	return e.status(), data
}

// call decodes the body into the operation's input and runs it. Member
// names match exactly, as KMS matches them; members it does not know are
// ignored; an empty body is an empty input.
func call[In, Out any](body []byte, op func(*In) (*Out, *apiError)) (any, *apiError) {
	in := new(In)
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, in); err != nil {
			return nil, fail(errSerialization, "%v", err)
		}
	}
	out, err := op(in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dryRun is DryRun's answer: the request would have succeeded.
func dryRun(on *bool) *apiError {
	if on != nil && *on {
		return fail(errDryRun, "The request would have succeeded, but the DryRun option is set.")
	}
	return nil
}

// keyFor resolves a request's KeyId to a key of usage, naming the call in
// the refusal of a key of another usage.
func (s *Server) keyFor(id, usage, op string) (*Key, *apiError) {
	k, err := s.Keys.resolve(id)
	if err != nil {
		return nil, err
	}
	if k.KeyUsage != usage {
		return nil, fail(errInvalidKeyUsage, "%s key usage is %s which is not valid for %s.", k.ARN(), k.KeyUsage, op)
	}
	return k, nil
}

type generateMacInput struct {
	KeyID        *string  `json:"KeyId"`
	Message      []byte   `json:"Message"`
	MacAlgorithm *string  `json:"MacAlgorithm"`
	GrantTokens  []string `json:"GrantTokens"`
	DryRun       *bool    `json:"DryRun"`
}

type generateMacOutput struct {
	KeyID        string `json:"KeyId"`
	Mac          []byte `json:"Mac"`
	MacAlgorithm string `json:"MacAlgorithm"`
}

// generateMac: HMAC-SHA256 (RFC 2104) of the message under an HMAC_256
// key; another algorithm is InvalidKeyUsage, as KMS refuses an algorithm
// the key's spec does not support.
func (s *Server) generateMac(in *generateMacInput) (*generateMacOutput, *apiError) {
	var v validation
	v.required("keyId", in.KeyID != nil)
	v.text("keyId", in.KeyID, 1, maxKeyID)
	v.required("message", in.Message != nil)
	v.blob("message", in.Message, 1, maxPlaintext)
	v.required("macAlgorithm", in.MacAlgorithm != nil)
	v.enum("macAlgorithm", in.MacAlgorithm, macAlgorithms...)
	v.grantTokens(in.GrantTokens)
	if err := v.err(); err != nil {
		return nil, err
	}
	k, err := s.keyFor(*in.KeyID, UsageMAC, "GenerateMac")
	if err != nil {
		return nil, err
	}
	if *in.MacAlgorithm != "HMAC_SHA_256" {
		return nil, fail(errInvalidKeyUsage, "Algorithm %s is incompatible with key spec %s.", *in.MacAlgorithm, k.KeySpec)
	}
	if err := dryRun(in.DryRun); err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, k.Material)
	mac.Write(in.Message)
	return &generateMacOutput{KeyID: k.ARN(), Mac: mac.Sum(nil), MacAlgorithm: *in.MacAlgorithm}, nil
}

type encryptInput struct {
	KeyID               *string           `json:"KeyId"`
	Plaintext           []byte            `json:"Plaintext"`
	EncryptionContext   map[string]string `json:"EncryptionContext"`
	EncryptionAlgorithm *string           `json:"EncryptionAlgorithm"`
	GrantTokens         []string          `json:"GrantTokens"`
	DryRun              *bool             `json:"DryRun"`
}

type encryptOutput struct {
	CiphertextBlob      []byte `json:"CiphertextBlob"`
	KeyID               string `json:"KeyId"`
	EncryptionAlgorithm string `json:"EncryptionAlgorithm"`
}

// symmetricOnly refuses an encryption algorithm other than the one of a
// symmetric key.
func symmetricOnly(alg *string, k *Key) *apiError {
	if alg != nil && *alg != "SYMMETRIC_DEFAULT" {
		return fail(errInvalidKeyUsage, "Algorithm %s is incompatible with key spec %s.", *alg, k.KeySpec)
	}
	return nil
}

func (s *Server) encrypt(in *encryptInput) (*encryptOutput, *apiError) {
	var v validation
	v.required("keyId", in.KeyID != nil)
	v.text("keyId", in.KeyID, 1, maxKeyID)
	v.required("plaintext", in.Plaintext != nil)
	v.blob("plaintext", in.Plaintext, 1, maxPlaintext)
	v.enum("encryptionAlgorithm", in.EncryptionAlgorithm, encryptionAlgorithms...)
	v.grantTokens(in.GrantTokens)
	if err := v.err(); err != nil {
		return nil, err
	}
	k, err := s.keyFor(*in.KeyID, UsageEncrypt, "Encrypt")
	if err != nil {
		return nil, err
	}
	if err := symmetricOnly(in.EncryptionAlgorithm, k); err != nil {
		return nil, err
	}
	if err := dryRun(in.DryRun); err != nil {
		return nil, err
	}
	blob, serr := seal(k, in.Plaintext, in.EncryptionContext)
	if serr != nil {
		return nil, fail(errInternal, "%v", serr)
	}
	return &encryptOutput{CiphertextBlob: blob, KeyID: k.ARN(), EncryptionAlgorithm: "SYMMETRIC_DEFAULT"}, nil
}

type decryptInput struct {
	CiphertextBlob      []byte            `json:"CiphertextBlob"`
	EncryptionContext   map[string]string `json:"EncryptionContext"`
	KeyID               *string           `json:"KeyId"`
	EncryptionAlgorithm *string           `json:"EncryptionAlgorithm"`
	GrantTokens         []string          `json:"GrantTokens"`
	DryRun              *bool             `json:"DryRun"`
	DryRunModifiers     []string          `json:"DryRunModifiers"`
}

type decryptOutput struct {
	KeyID               string `json:"KeyId"`
	Plaintext           []byte `json:"Plaintext"`
	EncryptionAlgorithm string `json:"EncryptionAlgorithm"`
}

// decrypt: the key is the one the blob names; a KeyId given must name
// that same key (IncorrectKey otherwise). A blob that is not one of ours,
// was changed, or was sealed with another encryption context is
// InvalidCiphertext.
func (s *Server) decrypt(in *decryptInput) (*decryptOutput, *apiError) {
	ignoreCiphertext := in.DryRun != nil && *in.DryRun && slices.Contains(in.DryRunModifiers, "IGNORE_CIPHERTEXT")
	var v validation
	if !ignoreCiphertext {
		v.required("ciphertextBlob", in.CiphertextBlob != nil)
	}
	v.blob("ciphertextBlob", in.CiphertextBlob, 1, maxCiphertext)
	v.text("keyId", in.KeyID, 1, maxKeyID)
	v.enum("encryptionAlgorithm", in.EncryptionAlgorithm, encryptionAlgorithms...)
	for i := range in.DryRunModifiers {
		v.enum("dryRunModifiers."+strconv.Itoa(i+1)+".member", &in.DryRunModifiers[i], dryRunModifiers...)
	}
	v.grantTokens(in.GrantTokens)
	if err := v.err(); err != nil {
		return nil, err
	}
	var named *Key
	if in.KeyID != nil {
		k, err := s.keyFor(*in.KeyID, UsageEncrypt, "Decrypt")
		if err != nil {
			return nil, err
		}
		if err := symmetricOnly(in.EncryptionAlgorithm, k); err != nil {
			return nil, err
		}
		named = k
	}
	if ignoreCiphertext {
		return nil, dryRun(in.DryRun)
	}
	id, cerr := keyIDOf(in.CiphertextBlob)
	if cerr != nil {
		return nil, fail(errInvalidCiphertext, "")
	}
	if named != nil && named.KeyID != id {
		return nil, fail(errIncorrectKey, "The key ID in the request does not identify a KMS key that can perform this operation.")
	}
	k := s.Keys.byID(id)
	if k == nil || k.KeyUsage != UsageEncrypt {
		return nil, fail(errInvalidCiphertext, "")
	}
	if err := symmetricOnly(in.EncryptionAlgorithm, k); err != nil {
		return nil, err
	}
	plaintext, oerr := open(k, in.CiphertextBlob, in.EncryptionContext)
	if oerr != nil {
		return nil, fail(errInvalidCiphertext, "")
	}
	if err := dryRun(in.DryRun); err != nil {
		return nil, err
	}
	return &decryptOutput{KeyID: k.ARN(), Plaintext: plaintext, EncryptionAlgorithm: "SYMMETRIC_DEFAULT"}, nil
}

type describeKeyInput struct {
	KeyID       *string  `json:"KeyId"`
	GrantTokens []string `json:"GrantTokens"`
}

type keyMetadata struct {
	AWSAccountID          string   `json:"AWSAccountId"`
	KeyID                 string   `json:"KeyId"`
	Arn                   string   `json:"Arn"`
	CreationDate          float64  `json:"CreationDate"` // epoch seconds, as the JSON protocol writes timestamps
	Enabled               bool     `json:"Enabled"`
	Description           string   `json:"Description"`
	KeyUsage              string   `json:"KeyUsage"`
	KeyState              string   `json:"KeyState"`
	Origin                string   `json:"Origin"`
	KeyManager            string   `json:"KeyManager"`
	CustomerMasterKeySpec string   `json:"CustomerMasterKeySpec"`
	KeySpec               string   `json:"KeySpec"`
	EncryptionAlgorithms  []string `json:"EncryptionAlgorithms,omitempty"`
	MacAlgorithms         []string `json:"MacAlgorithms,omitempty"`
	MultiRegion           bool     `json:"MultiRegion"`
}

type describeKeyOutput struct {
	KeyMetadata keyMetadata `json:"KeyMetadata"`
}

func (s *Server) describeKey(in *describeKeyInput) (*describeKeyOutput, *apiError) {
	var v validation
	v.required("keyId", in.KeyID != nil)
	v.text("keyId", in.KeyID, 1, maxKeyID)
	v.grantTokens(in.GrantTokens)
	if err := v.err(); err != nil {
		return nil, err
	}
	k, err := s.Keys.resolve(*in.KeyID)
	if err != nil {
		return nil, err
	}
	m := keyMetadata{AWSAccountID: Account, KeyID: k.KeyID, Arn: k.ARN(),
		CreationDate: float64(k.Created.UnixMilli()) / 1000, Enabled: true, KeyUsage: k.KeyUsage,
		KeyState: "Enabled", Origin: "AWS_KMS", KeyManager: "CUSTOMER", CustomerMasterKeySpec: k.KeySpec, KeySpec: k.KeySpec}
	if k.KeySpec == SpecHMAC256 {
		m.MacAlgorithms = []string{"HMAC_SHA_256"}
	} else {
		m.EncryptionAlgorithms = []string{"SYMMETRIC_DEFAULT"}
	}
	return &describeKeyOutput{KeyMetadata: m}, nil
}

// Client is a KMS client of a Server served at endpoint, with local
// credentials.
func Client(endpoint string) *awskms.Client {
	return awskms.New(awskms.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}
