package chartcheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

var (
	chartDir   = filepath.Join("..", "seckill")
	production = filepath.Join(chartDir, "values-production.yaml")
	alertsFile = filepath.Join("..", "..", "prometheus", "alerts.yml")
	chartAlert = filepath.Join(chartDir, "files", "alerts.yml")
)

// Environment variables that carry secrets: each must come from a
// secretKeyRef, never a value.
var secretVars = []string{
	"DATABASE_URL", "REDIS_URL", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET",
	"STRIPE_SECRET_KEY", "SECKILL_EVENTS_URL", "SECKILL_EVENTS_SECRET",
	"TEMPORAL_API_KEY", "SECKILL_ADMIN_TOKEN", "OTEL_EXPORTER_OTLP_HEADERS",
}

// Text that would be a secret inlined in a manifest.
var secretLooking = []string{
	"postgres://", "postgresql://", "redis://", "rediss://", "redis-sentinel://",
	"redis-cluster://", "whsec_", "sk_live_", "sk_test_", "rk_live_", "BEGIN CERTIFICATE",
	"PRIVATE KEY",
}

func helm(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("helm is not on the PATH nor in $(go env GOPATH)/bin: run scripts/ensure-helm.sh (make test-chart does)")
	return ""
}

func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.Bytes(), &helmError{args: args, err: err, stderr: stderr.String() + stdout.String()}
	}
	return stdout.Bytes(), nil
}

type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return "helm " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

// rendered is one `helm template`, decoded.
type rendered struct {
	raw  []byte
	objs []Object
}

func render(t *testing.T, args ...string) rendered {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "seckill", chartDir, "--namespace", "shop"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := DecodeAll(out)
	if err != nil {
		t.Fatalf("helm template %v: %v", args, err)
	}
	if len(objs) == 0 {
		t.Fatalf("helm template %v rendered nothing", args)
	}
	return rendered{raw: out, objs: objs}
}

func all[T any](r rendered) []*T {
	var out []*T
	for _, o := range r.objs {
		if v, ok := o.Value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

func one[T any](t *testing.T, r rendered, name string) *T {
	t.Helper()
	for _, o := range r.objs {
		if v, ok := o.Value.(*T); ok && o.Name == name {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T named %q rendered", zero, name)
	return nil
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func mustEnv(t *testing.T, c corev1.Container, name string) corev1.EnvVar {
	t.Helper()
	e, ok := env(c, name)
	if !ok {
		t.Fatalf("container %s: no %s", c.Name, name)
	}
	return e
}

func secretRef(t *testing.T, c corev1.Container, name, secret, key string) {
	t.Helper()
	e := mustEnv(t, c, name)
	if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Fatalf("container %s: %s is not from a secretKeyRef: %+v", c.Name, name, e)
	}
	if r := e.ValueFrom.SecretKeyRef; r.Name != secret || r.Key != key {
		t.Errorf("container %s: %s from secret %s key %s, want %s key %s", c.Name, name, r.Name, r.Key, secret, key)
	}
}

// pods: every pod template rendered, by the name of its owner.
func pods(r rendered) map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for _, d := range all[appsv1.Deployment](r) {
		out["Deployment/"+d.Name] = d.Spec.Template
	}
	for _, j := range all[batchv1.Job](r) {
		out["Job/"+j.Name] = j.Spec.Template
	}
	return out
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, {"--values", production}} {
		if out, err := runHelm(t, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// `helm template` and `helm lint` write nothing to stderr: a warning there
// (as a link inside the chart gave every run) trains people to ignore it.
func TestHelmWarnsAboutNothing(t *testing.T) {
	for _, args := range [][]string{
		{"template", "seckill", chartDir, "--set", "metrics.prometheusRule.enabled=true"},
		{"template", "seckill", chartDir, "--values", production},
		{"lint", "--strict", chartDir},
	} {
		cmd := exec.Command(helm(t), args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		if stderr.Len() > 0 {
			t.Errorf("helm %s wrote to stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	}
}

// The decoder is strict: a misspelt field, an unknown kind, a duplicate key
// or a field of the wrong type fails it. Without this the other tests
// could pass on manifests Kubernetes refuses.
func TestDecoderIsStrict(t *testing.T) {
	r := render(t)
	var worker []byte
	for _, o := range r.objs {
		if o.Kind == "Deployment" && o.Name == "seckill-worker" {
			worker = o.Raw
		}
	}
	if !bytes.Contains(worker, []byte("\n  replicas: 2\n")) {
		t.Fatalf("the worker Deployment has no replicas to misspell:\n%s", worker)
	}
	if _, err := Decode(worker); err != nil {
		t.Fatalf("the worker Deployment as rendered: %v", err)
	}
	for name, doc := range map[string][]byte{
		"misspelt field":        bytes.Replace(worker, []byte("\n  replicas: 2\n"), []byte("\n  replicass: 2\n"), 1),
		"misspelt nested field": bytes.Replace(worker, []byte("readinessProbe:"), []byte("readinesProbe:"), 1),
		"duplicate key":         bytes.Replace(worker, []byte("\n  replicas: 2\n"), []byte("\n  replicas: 2\n  replicas: 3\n"), 1),
		"wrong type":            bytes.Replace(worker, []byte("\n  replicas: 2\n"), []byte("\n  replicas: two\n"), 1),
		"unknown kind":          bytes.Replace(worker, []byte("kind: Deployment"), []byte("kind: Deploymnet"), 1),
		"unknown group":         bytes.Replace(worker, []byte("apiVersion: apps/v1"), []byte("apiVersion: apps/v1beta1"), 1),
	} {
		if bytes.Equal(doc, worker) {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		if _, err := Decode(doc); err == nil {
			t.Errorf("%s: decoded without an error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	r := render(t)
	checkConsistent(t, r)
	checkNoInlinedSecrets(t, r)

	var kinds []string
	for _, o := range r.objs {
		kinds = append(kinds, o.Kind+"/"+o.Name)
	}
	slices.Sort(kinds)
	want := []string{
		"Deployment/seckill-api", "Deployment/seckill-worker",
		"HorizontalPodAutoscaler/seckill-api", "Job/seckill-migrate",
		"PodDisruptionBudget/seckill-api", "PodDisruptionBudget/seckill-worker",
		"Service/seckill-api", "Service/seckill-worker-metrics", "ServiceAccount/seckill",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("rendered %v, want %v (ServiceMonitor and PrometheusRule off by default)", kinds, want)
	}

	api := one[appsv1.Deployment](t, r, "seckill-api")
	if api.Spec.Replicas != nil {
		t.Errorf("the API Deployment sets replicas (%d) while its HPA scales it", *api.Spec.Replicas)
	}
	ac := container(t, api.Spec.Template.Spec, "api")
	if !slices.Equal(ac.Args, []string{"api"}) {
		t.Errorf("api args %v", ac.Args)
	}
	if p := ac.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("api readinessProbe %+v, want GET /readyz", p)
	}
	if p := ac.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("api livenessProbe %+v, want GET /healthz", p)
	}
	if e := mustEnv(t, ac, "SECKILL_HTTP_ADDR"); e.Value != "0.0.0.0:8080" {
		t.Errorf("SECKILL_HTTP_ADDR %q", e.Value)
	}
	if l := ac.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Sleep == nil || l.PreStop.Sleep.Seconds != 5 {
		t.Errorf("api preStop %+v, want a 5 s sleep", l)
	}
	if g := api.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("api terminationGracePeriodSeconds %v, want 30", g)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := ac.Resources.Requests[name]; !ok {
			t.Errorf("api requests no %s", name)
		}
	}

	worker := one[appsv1.Deployment](t, r, "seckill-worker")
	wc := container(t, worker.Spec.Template.Spec, "worker")
	if !slices.Equal(wc.Args, []string{"worker"}) {
		t.Errorf("worker args %v", wc.Args)
	}
	if e := mustEnv(t, wc, "SECKILL_METRICS_ADDR"); e.Value != "0.0.0.0:9100" {
		t.Errorf("SECKILL_METRICS_ADDR %q", e.Value)
	}
	// The API starts the draws and the worker runs them: one queue, their
	// own, for both.
	for _, c := range []corev1.Container{ac, wc} {
		if e := mustEnv(t, c, "TEMPORAL_DRAW_TASK_QUEUE"); e.Value != "seckill-draws" {
			t.Errorf("%s: TEMPORAL_DRAW_TASK_QUEUE %q, want seckill-draws", c.Name, e.Value)
		}
	}
	if g := worker.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 60 {
		t.Errorf("worker terminationGracePeriodSeconds %v, want 60", g)
	}
	svc := one[corev1.Service](t, r, "seckill-worker-metrics")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9100 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("worker metrics Service ports %+v", svc.Spec.Ports)
	}

	job := one[batchv1.Job](t, r, "seckill-migrate")
	hooks := strings.Split(job.Annotations["helm.sh/hook"], ",")
	slices.Sort(hooks)
	if !slices.Equal(hooks, []string{"pre-install", "pre-upgrade"}) {
		t.Errorf("migration Job hooks %v, want pre-install,pre-upgrade", hooks)
	}
	if p := job.Annotations["helm.sh/hook-delete-policy"]; !strings.Contains(p, "before-hook-creation") {
		t.Errorf("migration Job hook-delete-policy %q: a failed Job would block the next upgrade", p)
	}
	jc := container(t, job.Spec.Template.Spec, "migrate")
	if !slices.Equal(jc.Args, []string{"migrate"}) {
		t.Errorf("migrate args %v", jc.Args)
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("migrate restartPolicy %q", job.Spec.Template.Spec.RestartPolicy)
	}
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "" {
		t.Errorf("the pre-install migration Job uses ServiceAccount %q, which the chart creates only after it", sa)
	}

	for owner, pod := range pods(r) {
		c := pod.Spec.Containers[0]
		secretRef(t, c, "DATABASE_URL", "seckill", "database-url")
		secretRef(t, c, "REDIS_URL", "seckill", "redis-url")
		secretRef(t, c, "SECKILL_JWT_SECRET", "seckill", "jwt-secret")
		secretRef(t, c, "SECKILL_WEBHOOK_SECRET", "seckill", "webhook-secret")
		for _, name := range []string{"STRIPE_SECRET_KEY", "SECKILL_EVENTS_URL", "TEMPORAL_API_KEY", "TEMPORAL_TLS_CERT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if _, ok := env(c, name); ok {
				t.Errorf("%s sets %s by default", owner, name)
			}
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: securityContext %+v", owner, sc)
		}
		if psc := pod.Spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("%s: pod securityContext does not run as non-root", owner)
		}
	}
}

func TestProduction(t *testing.T) {
	r := render(t, "--values", production)
	checkConsistent(t, r)
	checkNoInlinedSecrets(t, r)

	const tlsDir = "/etc/seckill/temporal-tls"
	for owner, pod := range pods(r) {
		c := pod.Spec.Containers[0]
		// Redis through Sentinel, its URL from its own Secret.
		secretRef(t, c, "REDIS_URL", "seckill-redis", "sentinel-url")
		secretRef(t, c, "DATABASE_URL", "seckill", "database-url")
		secretRef(t, c, "SECKILL_WEBHOOK_SECRET", "seckill", "stripe-webhook-secret")
		secretRef(t, c, "STRIPE_SECRET_KEY", "seckill", "stripe-secret-key")
		secretRef(t, c, "SECKILL_EVENTS_URL", "seckill", "events-url")
		secretRef(t, c, "SECKILL_EVENTS_SECRET", "seckill", "events-secret")
		if e := mustEnv(t, c, "SECKILL_PAYMENT_PROVIDER"); e.Value != "stripe" {
			t.Errorf("%s: SECKILL_PAYMENT_PROVIDER %q", owner, e.Value)
		}
		// OIDC: no shared secret.
		if _, ok := env(c, "SECKILL_JWT_SECRET"); ok {
			t.Errorf("%s: SECKILL_JWT_SECRET set with an OIDC issuer (a start-up error)", owner)
		}
		if e := mustEnv(t, c, "SECKILL_OIDC_ISSUER"); !strings.HasPrefix(e.Value, "https://") {
			t.Errorf("%s: SECKILL_OIDC_ISSUER %q", owner, e.Value)
		}
		for _, name := range []string{"SECKILL_JWT_AUDIENCE", "SECKILL_ADMIN_CLAIM", "TEMPORAL_TLS_SERVER_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
			if e := mustEnv(t, c, name); e.Value == "" {
				t.Errorf("%s: %s empty", owner, name)
			}
		}

		// Temporal mTLS: the three files of the Secret, mounted read-only,
		// and the variables naming them.
		var mount *corev1.VolumeMount
		for i, m := range c.VolumeMounts {
			if m.MountPath == tlsDir {
				mount = &c.VolumeMounts[i]
			}
		}
		if mount == nil || !mount.ReadOnly {
			t.Fatalf("%s: no read-only mount at %s: %+v", owner, tlsDir, c.VolumeMounts)
		}
		files := map[string]string{} // path in the volume -> Secret/key
		for _, v := range pod.Spec.Volumes {
			if v.Name != mount.Name {
				continue
			}
			if v.Projected == nil {
				t.Fatalf("%s: volume %s is not a projected Secret volume", owner, v.Name)
			}
			for _, s := range v.Projected.Sources {
				if s.Secret == nil {
					t.Errorf("%s: volume %s has a source other than a Secret", owner, v.Name)
					continue
				}
				for _, it := range s.Secret.Items {
					files[it.Path] = s.Secret.Name + "/" + it.Key
				}
			}
		}
		for name, want := range map[string]string{
			"TEMPORAL_TLS_CERT": "seckill-temporal-client/tls.crt",
			"TEMPORAL_TLS_KEY":  "seckill-temporal-client/tls.key",
			"TEMPORAL_TLS_CA":   "seckill-temporal-client/ca.crt",
		} {
			e := mustEnv(t, c, name)
			rel, ok := strings.CutPrefix(e.Value, tlsDir+"/")
			if !ok || files[rel] != want {
				t.Errorf("%s: %s=%q is not the mounted %s (volume files %v)", owner, name, e.Value, want, files)
			}
		}
	}

	// The ServiceMonitors name their jobs as the alerts expect.
	alerts, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	sms := all[monitoringv1.ServiceMonitor](r)
	if len(sms) != 2 {
		t.Fatalf("%d ServiceMonitors, want 2 (api and worker)", len(sms))
	}
	for _, sm := range sms {
		var job string
		for _, ep := range sm.Spec.Endpoints {
			for _, rc := range ep.RelabelConfigs {
				if rc.TargetLabel == "job" && rc.Replacement != nil {
					job = *rc.Replacement
				}
			}
		}
		if job == "" || !bytes.Contains(alerts, []byte(job)) {
			t.Errorf("ServiceMonitor %s sets job %q, which deploy/prometheus/alerts.yml does not use", sm.Name, job)
		}
	}

	// The PrometheusRule's groups are alerts.yml's, exactly.
	rules := all[monitoringv1.PrometheusRule](r)
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	var want struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(alerts, &want); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var typed struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(alerts, &typed); err != nil {
		t.Errorf("%s does not fit a PrometheusRule's groups: %v", alertsFile, err)
	}
	var got struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	for _, o := range r.objs {
		if o.Kind == "PrometheusRule" {
			if err := yaml.Unmarshal(o.Raw, &got); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got.Spec.Groups == nil {
		got.Spec.Groups = []any{}
	}
	if want.Groups == nil {
		want.Groups = []any{}
	}
	if !reflect.DeepEqual(got.Spec.Groups, want.Groups) {
		gy, _ := yaml.Marshal(got.Spec.Groups)
		wy, _ := yaml.Marshal(want.Groups)
		t.Errorf("the PrometheusRule's groups differ from %s:\n--- rendered\n%s\n--- alerts.yml\n%s", alertsFile, gy, wy)
	}

	hpa := one[autoscalingv2.HorizontalPodAutoscaler](t, r, "seckill-api")
	if hpa.Spec.Behavior == nil || hpa.Spec.Behavior.ScaleUp == nil {
		t.Errorf("production HPA has no scale-up behavior")
	}
}

// The other forms: Temporal Cloud with an API key, Redis Cluster, the
// shared JWT secret, and everything optional switched off.
func TestVariants(t *testing.T) {
	r := render(t, "--values", production,
		"--set", "temporal.tls.enabled=false,temporal.serverName=",
		"--set", "temporal.address=seckill.a1b2c.tmprl.cloud:7233,temporal.namespace=seckill.a1b2c",
		"--set", "temporal.apiKey.enabled=true,temporal.apiKey.secretName=seckill-temporal",
		"--set", "redis.url.key=cluster-url",
		"--set", "otel.headers.enabled=true,otel.headers.secretName=seckill-otel")
	checkConsistent(t, r)
	checkNoInlinedSecrets(t, r)
	for owner, pod := range pods(r) {
		c := pod.Spec.Containers[0]
		secretRef(t, c, "TEMPORAL_API_KEY", "seckill-temporal", "temporal-api-key")
		secretRef(t, c, "REDIS_URL", "seckill-redis", "cluster-url")
		secretRef(t, c, "OTEL_EXPORTER_OTLP_HEADERS", "seckill-otel", "otlp-headers")
		for _, name := range []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_NAME"} {
			if _, ok := env(c, name); ok {
				t.Errorf("%s: %s set without TLS", owner, name)
			}
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == "temporal-tls" {
				t.Errorf("%s: temporal-tls volume without TLS", owner)
			}
		}
	}

	// CA only (a private CA, no client certificate), from its own Secret.
	r = render(t, "--set", "temporal.tls.enabled=true,temporal.tls.secretName=x,temporal.tls.certKey=,temporal.tls.keyKey=,temporal.tls.caSecretName=temporal-ca")
	checkConsistent(t, r)
	for owner, pod := range pods(r) {
		c := pod.Spec.Containers[0]
		if e := mustEnv(t, c, "TEMPORAL_TLS_CA"); e.Value != "/etc/seckill/temporal-tls/ca.crt" {
			t.Errorf("%s: TEMPORAL_TLS_CA %q", owner, e.Value)
		}
		if _, ok := env(c, "TEMPORAL_TLS_CERT"); ok {
			t.Errorf("%s: TEMPORAL_TLS_CERT without a certKey", owner)
		}
	}

	r = render(t, "--set", "api.autoscaling.enabled=false,api.pdb.enabled=false,worker.pdb.enabled=false,migration.enabled=false,serviceAccount.create=false",
		"--set", "extraEnv[0].name=SECKILL_LOG_LEVEL,extraEnv[0].value=debug",
		"--set", "api.env.SECKILL_IP_RATE=20/10s,env.SECKILL_IP_RATE=5/10s",
		// Numbers and booleans from --set stay strings in labels and annotations.
		"--set", "podAnnotations.a=1,api.podAnnotations.b=true,worker.podLabels.c=2,api.service.annotations.d=3")
	checkConsistent(t, r)
	var kinds []string
	for _, o := range r.objs {
		kinds = append(kinds, o.Kind)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"Deployment", "Deployment", "Service", "Service"}) {
		t.Errorf("with the options off: %v", kinds)
	}
	api := one[appsv1.Deployment](t, r, "seckill-api")
	if api.Spec.Replicas == nil || *api.Spec.Replicas != 2 {
		t.Errorf("API replicas %v without an HPA, want 2", api.Spec.Replicas)
	}
	if sa := api.Spec.Template.Spec.ServiceAccountName; sa != "default" {
		t.Errorf("API ServiceAccount %q with serviceAccount.create=false, want default", sa)
	}
	ac := container(t, api.Spec.Template.Spec, "api")
	if e := mustEnv(t, ac, "SECKILL_LOG_LEVEL"); e.Value != "debug" {
		t.Errorf("extraEnv: SECKILL_LOG_LEVEL %q", e.Value)
	}
	var rates []string
	for _, e := range ac.Env {
		if e.Name == "SECKILL_IP_RATE" {
			rates = append(rates, e.Value)
		}
	}
	if !slices.Equal(rates, []string{"20/10s"}) {
		t.Errorf("api.env over env: SECKILL_IP_RATE %v, want the API's only", rates)
	}
}

// Every alert's runbook_url points at metrics.prometheusRule.runbookURL,
// its own section appended.
func TestPrometheusRule_RunbookURLIsAValue(t *testing.T) {
	const base = "https://wiki.shop.example/seckill/runbook"
	r := render(t, "--set", "metrics.prometheusRule.enabled=true,metrics.prometheusRule.runbookURL="+base)
	rules := all[monitoringv1.PrometheusRule](r)
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	n := 0
	for _, g := range rules[0].Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert == "" {
				continue
			}
			n++
			if want := base + "#" + strings.ToLower(rule.Alert); rule.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", rule.Alert, rule.Annotations["runbook_url"], want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert rendered")
	}
}

// Values that cannot start seckill fail the render, with the reason.
func TestRefused(t *testing.T) {
	for name, set := range map[string]string{
		"OIDC and JWKS":             "auth.oidcIssuer=https://a.example,auth.jwksURL=https://b.example/jwks,auth.jwtIssuer=x",
		"JWKS without issuer":       "auth.jwksURL=https://b.example/jwks",
		"unknown provider":          "payments.provider=paypal",
		"TLS without Secret":        "temporal.tls.enabled=true",
		"cert without key":          "temporal.tls.enabled=true,temporal.tls.secretName=x,temporal.tls.keyKey=",
		"no Secret name":            "secrets.name=",
		"draws on the sagas' queue": "temporal.drawTaskQueue=seckill-orders",
		"sagas on the draws' queue": "temporal.taskQueue=seckill-draws",
	} {
		if _, err := runHelm(t, "template", "seckill", chartDir, "--set", set); err == nil {
			t.Errorf("%s (%s): rendered", name, set)
		}
	}
}

// The alerting rules have one source: the chart's files/alerts.yml, a
// regular file, so Helm reads it without its warning about links (a link
// in the chart made every `helm template` warn); deploy/prometheus/alerts.yml,
// which promtool, docker-compose's Prometheus and the tests read, is a link
// to it (or, where links are not kept, a copy that must be byte-identical).
// A packaged chart carries the file's content.
func TestAlertsFile(t *testing.T) {
	want, err := os.ReadFile(chartAlert)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s, the rules' source", alertsFile, chartAlert)
	}
	if fi, err := os.Lstat(chartAlert); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s must be a regular file (Helm warns about links in a chart): %v", chartAlert, err)
	}
	if fi, err := os.Lstat(alertsFile); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		link, _ := os.Readlink(alertsFile)
		target, _ := filepath.Abs(filepath.Join(filepath.Dir(alertsFile), link))
		source, _ := filepath.Abs(chartAlert)
		if target != source {
			t.Errorf("%s links to %s, not %s", alertsFile, link, chartAlert)
		}
	}

	dir := t.TempDir()
	if _, err := runHelm(t, "package", chartDir, "--destination", dir); err != nil {
		t.Fatal(err)
	}
	pkgs, _ := filepath.Glob(filepath.Join(dir, "seckill-*.tgz"))
	if len(pkgs) != 1 {
		t.Fatalf("helm package wrote %v", pkgs)
	}
	out, err := runHelm(t, "template", "seckill", pkgs[0], "--set", "metrics.prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := DecodeAll(out)
	if err != nil {
		t.Fatal(err)
	}
	var groups int
	for _, o := range objs {
		if pr, ok := o.Value.(*monitoringv1.PrometheusRule); ok {
			groups = len(pr.Spec.Groups)
		}
	}
	var file struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(want, &file); err != nil {
		t.Fatal(err)
	}
	if groups != len(file.Groups) {
		t.Errorf("the packaged chart's PrometheusRule has %d groups, alerts.yml %d", groups, len(file.Groups))
	}
}

// checkConsistent: the references between the rendered objects hold
// (selectors, named ports, volumes, scale targets), since a strict decode
// does not see them.
func checkConsistent(t *testing.T, r rendered) {
	t.Helper()
	deps := all[appsv1.Deployment](r)
	type podOf struct {
		owner string
		tmpl  corev1.PodTemplateSpec
	}
	var podList []podOf
	for owner, p := range pods(r) {
		podList = append(podList, podOf{owner, p})
	}
	for _, d := range deps {
		if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
			t.Errorf("Deployment %s: no selector", d.Name)
			continue
		}
		sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: selector %v does not match its pods %v", d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		}
		for _, other := range deps {
			if other != d && sel.Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("Deployment %s's selector also matches %s's pods", d.Name, other.Name)
			}
		}
	}
	for _, p := range podList {
		spec := p.tmpl.Spec
		if len(spec.Containers) != 1 {
			t.Errorf("%s: %d containers", p.owner, len(spec.Containers))
		}
		volumes := map[string]bool{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = true
		}
		for _, c := range spec.Containers {
			if c.Image == "" || !strings.Contains(c.Image, ":") {
				t.Errorf("%s: image %q", p.owner, c.Image)
			}
			if len(c.Resources.Requests) == 0 {
				t.Errorf("%s: no resources requested", p.owner)
			}
			ports := map[string]bool{}
			for _, cp := range c.Ports {
				ports[cp.Name] = true
			}
			for what, pr := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if pr == nil {
					continue
				}
				var port string
				switch {
				case pr.HTTPGet != nil:
					port = pr.HTTPGet.Port.String()
				case pr.TCPSocket != nil:
					port = pr.TCPSocket.Port.String()
				}
				if !ports[port] {
					t.Errorf("%s: %s probe on port %q, not a port of the container", p.owner, what, port)
				}
			}
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					t.Errorf("%s: mount of an unknown volume %q", p.owner, m.Name)
				}
			}
			seen := map[string]bool{}
			for _, e := range c.Env {
				if seen[e.Name] {
					t.Errorf("%s: %s set twice", p.owner, e.Name)
				}
				seen[e.Name] = true
			}
		}
	}
	// Each Service selects the pods of one Deployment, on a named port.
	services := all[corev1.Service](r)
	for _, s := range services {
		var matched []*appsv1.Deployment
		for _, d := range deps {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				matched = append(matched, d)
			}
		}
		if len(s.Spec.Selector) == 0 || len(matched) != 1 {
			t.Errorf("Service %s selects %d Deployments", s.Name, len(matched))
			continue
		}
		for _, sp := range s.Spec.Ports {
			found := false
			for _, cp := range matched[0].Spec.Template.Spec.Containers[0].Ports {
				found = found || cp.Name == sp.TargetPort.String()
			}
			if !found {
				t.Errorf("Service %s: targetPort %s is not a port of %s", s.Name, sp.TargetPort.String(), matched[0].Name)
			}
		}
	}
	for _, pdb := range all[policyv1.PodDisruptionBudget](r) {
		n := 0
		for _, d := range deps {
			if labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
				n++
			}
		}
		if n != 1 || (pdb.Spec.MinAvailable == nil) == (pdb.Spec.MaxUnavailable == nil) {
			t.Errorf("PodDisruptionBudget %s: selects %d Deployments; minAvailable %v, maxUnavailable %v", pdb.Name, n, pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
		}
	}
	for _, h := range all[autoscalingv2.HorizontalPodAutoscaler](r) {
		ref := h.Spec.ScaleTargetRef
		found := false
		for _, d := range deps {
			found = found || (ref.Kind == "Deployment" && ref.APIVersion == "apps/v1" && ref.Name == d.Name)
		}
		if !found || h.Spec.MinReplicas == nil || *h.Spec.MinReplicas > h.Spec.MaxReplicas || len(h.Spec.Metrics) == 0 {
			t.Errorf("HorizontalPodAutoscaler %s: target %+v found %v, replicas %v..%d, %d metrics", h.Name, ref, found, h.Spec.MinReplicas, h.Spec.MaxReplicas, len(h.Spec.Metrics))
		}
	}
	for _, sm := range all[monitoringv1.ServiceMonitor](r) {
		var matched []*corev1.Service
		for _, s := range services {
			if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
				matched = append(matched, s)
			}
		}
		if len(matched) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services", sm.Name, len(matched))
			continue
		}
		for _, ep := range sm.Spec.Endpoints {
			found := false
			for _, sp := range matched[0].Spec.Ports {
				found = found || sp.Name == ep.Port
			}
			if !found || ep.Path != "/metrics" {
				t.Errorf("ServiceMonitor %s: port %q path %q on Service %s", sm.Name, ep.Port, ep.Path, matched[0].Name)
			}
		}
	}
}

// checkNoInlinedSecrets: no Secret or ConfigMap is rendered, every secret
// variable comes from a secretKeyRef, and nothing in the output looks like
// a secret value.
func checkNoInlinedSecrets(t *testing.T, r rendered) {
	t.Helper()
	for _, o := range r.objs {
		if o.Kind == "Secret" || o.Kind == "ConfigMap" {
			t.Errorf("the chart renders a %s (%s): secrets come from existing Secrets", o.Kind, o.Name)
		}
	}
	for owner, pod := range pods(r) {
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if slices.Contains(secretVars, e.Name) && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
					t.Errorf("%s: %s is not from a secretKeyRef", owner, e.Name)
				}
			}
		}
	}
	for _, s := range secretLooking {
		if bytes.Contains(r.raw, []byte(s)) {
			t.Errorf("the rendered manifests contain %q", s)
		}
	}
}

// Objects whose fields the README describes as a whole.
var wholeValues = map[string]bool{
	"podSecurityContext": true, "securityContext": true,
	"metrics.serviceMonitor.jobs": true, "api.autoscaling.behavior": true,
}

// Every value of values.yaml has its row in the chart's README.
func TestReadmeDocumentsEveryValue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, m map[string]any)
	n := 0
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := prefix + k
			sub, isMap := v.(map[string]any)
			last := path[strings.LastIndex(path, ".")+1:]
			if isMap && len(sub) > 0 && !wholeValues[path] && last != "resources" && last != "strategy" && !strings.HasSuffix(last, "Probe") {
				walk(path+".", sub)
				continue
			}
			n++
			if !bytes.Contains(readme, []byte("| `"+path+"` |")) {
				t.Errorf("README.md has no row for %s", path)
			}
		}
	}
	walk("", values)
	if n < 100 {
		t.Errorf("only %d values found", n)
	}

	// And every row of the table is a value.
	_, table, ok := bytes.Cut(readme, []byte("\n## Values\n"))
	if !ok {
		t.Fatal("README.md has no Values section")
	}
	rows := 0
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(table, -1) {
		rows++
		var v any = values
		for _, k := range strings.Split(string(m[1]), ".") {
			sub, _ := v.(map[string]any)
			var ok bool
			if v, ok = sub[k]; !ok {
				t.Errorf("README.md documents %s, which values.yaml does not have", m[1])
				break
			}
		}
	}
	if rows < n {
		t.Errorf("%d rows for %d values", rows, n)
	}
}
