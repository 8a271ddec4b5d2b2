package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every secret comes from a Secret; REDIS_URL is built from url, sentinel or
// cluster, or taken from the operator's own Secret.
func TestChart_RedisAndSecrets(t *testing.T) {
	write := valuesWriter(t)
	for _, c := range []struct {
		name, values, url string
	}{
		{"url", "", "redis://redis:6379"},
		{"sentinel", "redis:\n  password: p@ss\n  sentinel:\n    addresses: [s0:26379, s1:26379]\n    masterName: main\n", "redis+sentinel://:p%40ss@s0:26379,s1:26379/main"},
		{"cluster", "redis:\n  cluster:\n    addresses: [n0:6379, n1:6379, n2:6379]\n", "redis+cluster://n0:6379,n1:6379,n2:6379"},
	} {
		files := []string{}
		if c.values != "" {
			files = append(files, write(c.name+".yaml", c.values))
		}
		o := render(t, files...)
		env := envOf(container(t, o))
		ref := env["REDIS_URL"].ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != o.Secret.Name {
			t.Fatalf("%s: REDIS_URL %+v", c.name, env["REDIS_URL"])
		}
		if got := string(o.Secret.Data[ref.SecretKeyRef.Key]); got != c.url {
			t.Fatalf("%s: REDIS_URL %q, want %q", c.name, got, c.url)
		}
		for _, k := range []string{"JWT_SECRET", "INTERNAL_API_KEY"} {
			ref := env[k].ValueFrom
			if env[k].Value != "" || ref == nil || ref.SecretKeyRef == nil || len(o.Secret.Data[ref.SecretKeyRef.Key]) < 32 {
				t.Fatalf("%s: %s %+v", c.name, k, env[k])
			}
		}
	}

	own := write("own.yaml", "redis:\n  existingSecret: my-redis\n  existingSecretKey: url\nsecrets:\n  existingSecret: my-secrets\n")
	o := render(t, own)
	env := envOf(container(t, o))
	if r := env["REDIS_URL"].ValueFrom.SecretKeyRef; r.Name != "my-redis" || r.Key != "url" {
		t.Fatalf("REDIS_URL from %+v", r)
	}
	if r := env["JWT_SECRET"].ValueFrom.SecretKeyRef; r.Name != "my-secrets" {
		t.Fatalf("JWT_SECRET from %+v", r)
	}
	if o.Secret != nil {
		t.Fatalf("the chart made a Secret beside the operator's own: %+v", o.Secret.Data)
	}

	for _, bad := range []string{
		"redis:\n  url: redis://r:6379\n  sentinel:\n    addresses: [s0:26379]\n", // Sentinel would win silently
		"redis:\n  url: redis://r:6379\n  existingSecret: mine\n",
		"redis:\n  sentinel:\n    addresses: [s0:26379]\n  cluster:\n    addresses: [n0:6379]\n",
		"redis:\n  urll: redis://x\n", // a typo: the schema refuses it
	} {
		if _, err := renderErr(write("bad.yaml", bad)); err == nil {
			t.Fatalf("rendered with %q", bad)
		}
	}
	// Secrets and the chart's own settings never go in plain config: the
	// failure names the key and the value to use (issue 57, 5).
	for key, use := range map[string]string{"REDIS_URL": "redis.url", "JWT_SECRET": "secrets.jwtSecret", "INTERNAL_API_KEY": "secrets.internalApiKey",
		"FCM_CREDENTIALS": "secrets.fcmCredentials", "SERVER_PORT": "service.port", "METRICS_ADDR": "metrics.port",
		"CONSOLE_PASSWORD": "console.enabled and secrets.consolePassword"} {
		_, err := renderErr(write("bad.yaml", "config:\n  "+key+": x\n"))
		if err == nil || !strings.Contains(err.Error(), "config."+key) || !strings.Contains(err.Error(), "use "+use) {
			t.Errorf("config.%s: %v, want a failure naming it and %s", key, err, use)
		}
	}
}

// The console, off by default, on with console.enabled: CONSOLE_PASSWORD
// from the Secret, made at the first install unless given.
func TestChart_ConsolePasswordFromTheSecret(t *testing.T) {
	if _, set := envOf(container(t, render(t)))["CONSOLE_PASSWORD"]; set {
		t.Fatal("CONSOLE_PASSWORD set with the console off")
	}
	write := valuesWriter(t)
	for values, want := range map[string]string{
		"console:\n  enabled: true\n": "",
		"console:\n  enabled: true\nsecrets:\n  consolePassword: an operator's own password\n": "an operator's own password",
	} {
		o := render(t, write("console.yaml", values))
		ref := envOf(container(t, o))["CONSOLE_PASSWORD"].ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != o.Secret.Name {
			t.Fatalf("%q: CONSOLE_PASSWORD %+v", values, ref)
		}
		got := string(o.Secret.Data[ref.SecretKeyRef.Key])
		if (want == "" && len(got) < 32) || (want != "" && got != want) {
			t.Fatalf("%q: the console's password %q", values, got)
		}
	}
}

// valuesWriter writes values files into a folder of the test's: write(name,
// body) answers the file's path.
func valuesWriter(t *testing.T) func(name, body string) string {
	dir := t.TempDir()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// A channel the hub sends itself turned on in config without its keys
// fails to render, naming the value (the pod would stop at start-up);
// with them, or with the operator's own Secret, it renders.
func TestChart_ChannelsOnNeedTheirKeys(t *testing.T) {
	write := valuesWriter(t)
	for want, values := range map[string]string{
		"config.WEBPUSH_VAPID_PUBLIC_KEY": "config:\n  DELIVERY_CHANNELS: webpush\n",
		"secrets.webpushVapidPrivateKey":  "config:\n  DELIVERY_CHANNELS: webpush\n  WEBPUSH_VAPID_PUBLIC_KEY: B\n  WEBPUSH_SUBJECT: mailto:a@b.c\n",
		"secrets.fcmCredentials":          "config:\n  DELIVERY_CHANNELS: email, fcm\n",
		"config.APNS_TOPIC":               "config:\n  DELIVERY_CHANNELS: apns\n  APNS_KEY_ID: K\n  APNS_TEAM_ID: T\nsecrets:\n  apnsPrivateKey: k\n",
	} {
		if _, err := renderErr(write("v.yaml", values)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want a failure naming %s", values, err, want)
		}
	}
	for _, values := range []string{
		"config:\n  DELIVERY_CHANNELS: fcm,apns\n  APNS_KEY_ID: K\n  APNS_TEAM_ID: T\n  APNS_TOPIC: com.x\nsecrets:\n  fcmCredentials: '{}'\n  apnsPrivateKey: k\n",
		"config:\n  DELIVERY_CHANNELS: fcm\nsecrets:\n  existingSecret: mine\n",
	} {
		if _, err := renderErr(write("v.yaml", values)); err != nil {
			t.Errorf("%q: %v", values, err)
		}
	}
}

// Each push channel's key has a Secret slot (DESIGN, Kubernetes): given,
// the chart's Secret holds it and the pod reads it from there; from the
// operator's own Secret under the slot's key; absent, no variable. A key
// in plain config is refused.
func TestChart_PushChannelKeysHaveSecretSlots(t *testing.T) {
	write := valuesWriter(t)
	keys := map[string]string{
		"WEBPUSH_VAPID_PRIVATE_KEY": "vapid-private", "FCM_CREDENTIALS": `{"type":"service_account"}`,
		"APNS_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----\n",
	}
	o := render(t, write("keys.yaml", "secrets:\n  webpushVapidPrivateKey: vapid-private\n  fcmCredentials: '{\"type\":\"service_account\"}'\n"+
		"  apnsPrivateKey: |\n    -----BEGIN PRIVATE KEY-----\n    MIG\n    -----END PRIVATE KEY-----\n"))
	env := envOf(container(t, o))
	for v, want := range keys {
		ref := env[v].ValueFrom
		if env[v].Value != "" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != o.Secret.Name {
			t.Fatalf("%s: %+v", v, env[v])
		}
		if got := string(o.Secret.Data[ref.SecretKeyRef.Key]); got != strings.ReplaceAll(want, `\n`, "\n") {
			t.Errorf("%s: the Secret holds %q, want %q", v, got, want)
		}
	}
	env = envOf(container(t, render(t)))
	for v := range keys {
		if _, ok := env[v]; ok {
			t.Errorf("%s set with no key given", v)
		}
	}
	env = envOf(container(t, render(t, write("own.yaml", "secrets:\n  existingSecret: my-secrets\n"))))
	for v, slot := range map[string]string{"FCM_CREDENTIALS": "fcm-credentials", "APNS_PRIVATE_KEY": "apns-private-key"} {
		if r := env[v].ValueFrom; r == nil || r.SecretKeyRef.Name != "my-secrets" || r.SecretKeyRef.Key != slot {
			t.Errorf("%s with an existing Secret: %+v", v, env[v])
		}
	}
	for _, v := range []string{"FCM_CREDENTIALS", "APNS_PRIVATE_KEY"} {
		if _, err := renderErr(write("bad.yaml", "config:\n  "+v+": x\n")); err == nil {
			t.Errorf("%s in plain config rendered", v)
		}
	}
}

// valuesFile writes a values file of text for a render.
func valuesFile(t *testing.T, text string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A Redis without a password is said loudly at install (the default,
// redis://redis:6379, has none), and not when it has one (hardening V, 19).
func TestChart_SaysLoudlyWhenRedisHasNoPassword(t *testing.T) {
	for values, warned := range map[string]bool{
		"": true,
		"redis:\n  url: redis://redis.data:6379/0\n":                           true,
		"redis:\n  url: redis://:s3cret@redis.data:6379/0\n":                   false,
		"redis:\n  sentinel:\n    addresses: [s0:26379]\n":                     true,
		"redis:\n  sentinel:\n    addresses: [s0:26379]\n  password: s3cret\n": false,
		"redis:\n  cluster:\n    addresses: [c0:6379]\n  password: s3cret\n":   false,
		"redis:\n  existingSecret: my-redis\n":                                 false,
	} {
		var files []string
		if values != "" {
			files = append(files, valuesFile(t, values))
		}
		if got := strings.Contains(render(t, files...).Notes, "WITHOUT A PASSWORD"); got != warned {
			t.Errorf("values %q: warned %v, want %v", values, got, warned)
		}
	}
}

// docs/operations.md's CA bundle, as printed: the pod mounts it read-only
// and names it in SSL_CERT_FILE (issue 57, 5).
func TestChart_MountsACABundleAsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "With the chart (the image is distroless")
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	values, _, _ := strings.Cut(rest, "```")
	o := render(t, valuesWriter(t)("ca.yaml", values))
	c := container(t, o)
	vols := o.Deployment.Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].ConfigMap == nil || vols[0].ConfigMap.Name != "roomhub-ca-bundle" ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/roomhub/ca" || !c.VolumeMounts[0].ReadOnly ||
		envOf(c)["SSL_CERT_FILE"].Value != "/etc/roomhub/ca/ca-bundle.pem" {
		t.Fatalf("volumes %+v, mounts %+v, env %+v", vols, c.VolumeMounts, envOf(c)["SSL_CERT_FILE"])
	}
}
