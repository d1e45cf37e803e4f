package start_test

import "testing"

// TestFingerprintCorpus pins the fingerprint of a corpus of start bodies to
// the values stored rows already carry: a fingerprint that changed would
// turn every retry in flight into operation_key_payload_mismatch. Each body
// is validated and fingerprinted as the start route does; the corpus spans
// non-ASCII text, escapes, every allocation form, byoc objects, members at
// their defaults, nulls and empty objects. The "every member" value was
// also computed independently of this code, as RFC 8785 has it (non-ASCII
// and U+2028 written as they are).
func TestFingerprintCorpus(t *testing.T) {
	rows := []struct {
		rule, body, want string
	}{
		{"the least body", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"the operation key is left out", `{"operationKey":"k-1","repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"an org", `{"orgId":"o1","repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}`,
			"a61d4586a83987e465df9c8a0fc5672432bd8c58394abc2f107b8420a2ecfe43"},
		{"a branch and a variant", `{"repository":{"type":"github","repo":"acme/app","branch":"feature/x-1"},"agent":{"mode":"code","model":"anthropic/claude","variant":"fast"}}`,
			"4fd11aff934d557cd07d63a8e00a4fe8ad235afce45227df3ebe4a4f83affcb6"},
		{"gitlab url", `{"repository":{"type":"gitlab","url":"https://gitlab.com/group/sub/project.git"},"agent":{"mode":"code","model":"anthropic/claude"}}`,
			"78c7ce6b462340262ac15654e2cffb34bfbf17266e5f672888554edb4e65200d"},
		{"git url", `{"repository":{"type":"git","url":"https://git.example.com/r"},"agent":{"mode":"ask","model":"openai/gpt-5"}}`,
			"3cb7b5458ac53b5cc4c3e70124b95438d63de6a5dc8b71dea0a440c0d9fbbbf7"},
		{"non-ASCII prompt", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{"prompt":"Grüße, 日本語, emoji \ud83d\ude00 and é"}}`,
			"60b349949ae5601e96999b2454bc1e85f86f734a9c99626251980adc1e47b51a"},
		{"escapes in the prompt", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{"prompt":"line\nbreak\ttab \"quoted\" back\\slash \u0000 nul \u001f unit \u007f del </script> & \u2028 \u2029"}}`,
			"081cc6d0180e79e9627ca8d3ebe95fd173840acac314cf0b420d7615e7dff97a"},
		{"the prompt as raw UTF-8", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{"prompt":"café ☃ 😀"}}`,
			"30ef4168bc04b2e83bb8b6962569f0de00608b5fa053dea0fe1ea404041b5d1f"},
		{"an empty prompt", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{"prompt":""}}`,
			"c51ad5bde454aff793ffbeb57dac2a8f8f4b9f356273797a61bc6d9f2beef3f2"},
		{"a null prompt", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{"prompt":null}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"an empty initialTurn", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":{}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"a null initialTurn", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"initialTurn":null}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"null members", `{"operationKey":null,"orgId":null,"repository":{"type":"github","repo":"acme/app","branch":null},"agent":{"mode":"code","model":"anthropic/claude","variant":null},"runtime":null,"createdOnPlatform":null}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"an empty runtime", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"runtime members null", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":null,"sandboxKind":null}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"sandboxKind at its default", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxKind":"isolated"}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"sandboxKind code-review", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxKind":"code-review"}}`,
			"4dc460f9314b9920dcfeab1bfe208cd0535f3dbf26ca4c0f22ff733669196919"},
		{"the name cloudflare-containers-standard-4", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"cloudflare-containers-standard-4"}}`,
			"190abe1f98043280efd1b7f17680fc3fb24d6a2b4befd2c0f561a9eed0b6ea07"},
		{"the name cloudflare-containers-standard-3", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"cloudflare-containers-standard-3"}}`,
			"7f9feee59e8273e63988a198c0f10163770fd311c2f817696a87d7a105b137ac"},
		{"the name vercel-small", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"vercel-small"}}`,
			"94be08fbd757d93a3647b7eb016b25fbd2d1774561e6cb46fbfa63e00b00fd85"},
		{"the name vercel-large", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"vercel-large"}}`,
			"250ad0d64ae8e5b93c011b41ae9269398978b0fc767185d45f9676c1c8d89128"},
		{"the name cloudflare-single", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"cloudflare-single"}}`,
			"b51d7cf2c741e9afdf762b503957bbeb6c56984b4e1a5bb60a39db5be984d7fa"},
		{"the name isolated-standard", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"isolated-standard"}}`,
			"f8eda78acb85131a9d26b616610a95860ace3ceee9f21aef34310dfdc68b9c2f"},
		{"the name cloudflare-shared", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":"cloudflare-shared"}}`,
			"17eedb1d2634d1609faf813ec3f146846e46ac404c86caec61f05fb6622cd8e4"},
		{"the kilo object cloudflare-containers/standard-4", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"cloudflare-containers","account":"kilo"},"instanceType":"standard-4"}}}`,
			"190abe1f98043280efd1b7f17680fc3fb24d6a2b4befd2c0f561a9eed0b6ea07"},
		{"the kilo object cloudflare-containers/standard-3", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"cloudflare-containers","account":"kilo"},"instanceType":"standard-3"}}}`,
			"7f9feee59e8273e63988a198c0f10163770fd311c2f817696a87d7a105b137ac"},
		{"the kilo object vercel/small", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo"},"instanceType":"small"}}}`,
			"94be08fbd757d93a3647b7eb016b25fbd2d1774561e6cb46fbfa63e00b00fd85"},
		{"the kilo object vercel/large", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"kilo"},"instanceType":"large"}}}`,
			"250ad0d64ae8e5b93c011b41ae9269398978b0fc767185d45f9676c1c8d89128"},
		{"the kilo object cloudflare/single", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"single"}}}`,
			"b51d7cf2c741e9afdf762b503957bbeb6c56984b4e1a5bb60a39db5be984d7fa"},
		{"the kilo object cloudflare/isolated-standard", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"isolated-standard"}}}`,
			"f8eda78acb85131a9d26b616610a95860ace3ceee9f21aef34310dfdc68b9c2f"},
		{"the kilo object cloudflare/shared", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"cloudflare","account":"kilo"},"instanceType":"shared"}}}`,
			"17eedb1d2634d1609faf813ec3f146846e46ac404c86caec61f05fb6622cd8e4"},
		{"the byoc object vercel/small", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"byoc"},"instanceType":"small"}}}`,
			"df1f53c70432f98ffc511449b2bb0063f23a943a18b9a895b04324bc97401c65"},
		{"the byoc object vercel/large", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"byoc"},"instanceType":"large"}}}`,
			"6a486fb3733300985fbf0fb46284a13b86b544d36177c1ef33d771c284dfcfe0"},
		{"a byoc object, members in another order", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"runtime":{"sandboxAllocation":{"instanceType":"small","provider":{"account":"byoc","id":"vercel"}}}}`,
			"df1f53c70432f98ffc511449b2bb0063f23a943a18b9a895b04324bc97401c65"},
		{"createdOnPlatform", `{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"createdOnPlatform":"slack"}`,
			"148d1f0fbdf2c42ba44573590b5f273a10881d19561d724c774916d7f529dfc2"},
		{"members in another order", `{"agent":{"model":"anthropic/claude","mode":"code"},"createdOnPlatform":"web","repository":{"repo":"acme/app","type":"github"},"orgId":"o2"}`,
			"73795cf5da010e15ee30453d39ace7e55a6380a502c7f85789a9176dc2ada1e2"},
		{"escaped member names", `{"repository":{"\u0074ype":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"escaped ASCII in values", `{"repository":{"type":"github","repo":"\u0061cme/app"},"agent":{"mode":"\u0063ode","model":"anthropic\/claude"}}`,
			"a40460b2635deb2d453deb6fc368944320e80b666caf66b2e09c2713fbb61b15"},
		{"every member", `{"operationKey":"k","orgId":"o1","repository":{"type":"github","repo":"acme/app","branch":"main"},"agent":{"mode":"code","model":"m","variant":"v"},"initialTurn":{"prompt":"h\u00e9llo <&> \u2028 \ud83d\ude00"},"runtime":{"sandboxAllocation":{"provider":{"id":"vercel","account":"byoc"},"instanceType":"small"},"sandboxKind":"isolated"},"createdOnPlatform":"web"}`,
			"b018ad4fa1f1816b441a156b987dfd3e646f25f75276ef240945ceb48bfa9092"},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			if got := fingerprint(t, r.body); got != r.want {
				t.Errorf("fingerprint %s, want %s", got, r.want)
			}
		})
	}
}
