package chartcheck

import (
	"bytes"
	"fmt"
	"regexp"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Kinds are the apiVersion/kind pairs the chart may render, each with the
// Go type it is decoded into. Anything else is an error.
var Kinds = map[string]func() any{
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// Object is one rendered manifest, decoded.
type Object struct {
	APIVersion, Kind, Name string
	// Source is the template it came from (helm's "# Source:" line).
	Source string
	// Value is a pointer to the Go type of Kinds.
	Value any
	Raw   []byte
}

var (
	separator = regexp.MustCompile(`(?m)^---[ \t]*$`)
	source    = regexp.MustCompile(`(?m)^# Source: (.*)$`)
	comment   = regexp.MustCompile(`(?m)^[ \t]*#.*$`)
)

// Split cuts a multi-document YAML stream into its documents, leaving out
// those with nothing but comments and blank lines.
func Split(stream []byte) [][]byte {
	var docs [][]byte
	for _, doc := range separator.Split(string(stream), -1) {
		if len(bytes.TrimSpace(comment.ReplaceAll([]byte(doc), nil))) == 0 {
			continue
		}
		docs = append(docs, []byte(doc))
	}
	return docs
}

// Decode decodes one manifest strictly into the Go type of its
// apiVersion and kind: an unknown kind, an unknown (or misspelt) field or a
// duplicate key is an error.
func Decode(doc []byte) (Object, error) {
	var tm struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return Object{}, fmt.Errorf("not YAML: %w", err)
	}
	o := Object{APIVersion: tm.APIVersion, Kind: tm.Kind, Name: tm.Metadata.Name, Raw: doc}
	if m := source.FindSubmatch(doc); m != nil {
		o.Source = string(m[1])
	}
	newValue, ok := Kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return o, fmt.Errorf("%s: unknown apiVersion/kind %s/%s", o.Source, tm.APIVersion, tm.Kind)
	}
	o.Value = newValue()
	if err := yaml.UnmarshalStrict(doc, o.Value); err != nil {
		return o, fmt.Errorf("%s: %s %q: %w", o.Source, tm.Kind, o.Name, err)
	}
	return o, nil
}

// DecodeAll splits and decodes a stream; the first error stops it.
func DecodeAll(stream []byte) ([]Object, error) {
	var objs []Object
	for _, doc := range Split(stream) {
		o, err := Decode(doc)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}
