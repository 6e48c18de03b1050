// Package hooks holds the stand-in's helm hook programs, the parts KAI's chart runs as
// hook Jobs (kai-contract.md §1.1, §14): crd-upgrader (pre-install/pre-upgrade: apply the
// CRDs), config-deployer (post-install/post-upgrade: apply Config kai-config from the
// kai-config-manifest ConfigMap, as KAI's kai-config-deployer does with kubectl) and
// config-cleanup (post-delete: remove kai-config and, through the garbage collector,
// everything the operator made from it). Our code, written from the contract.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"kaiops.dev/lab/kai-standin/faults"
	"kaiops.dev/lab/kai-standin/internal/boot"
)

// Decode reads every non-empty YAML document of a stream as an object.
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("failed to decode manifest: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("failed to decode manifest: a document without kind or name")
		}
		out = append(out, u)
	}
}

// ReadManifests reads the files (or every *.yaml/*.yml/*.json file of the folders)
// named, in name order. Kubernetes' ConfigMap volumes show each key as a link into a
// hidden ..data folder; hidden entries are skipped.
func ReadManifests(paths []string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if strings.HasPrefix(e.Name(), ".") || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := Decode(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Apply server-side-applies each object, taking over conflicting fields (kubectl apply
// --server-side --force-conflicts --field-manager=<manager>).
func Apply(ctx context.Context, c client.Client, manager string, objs []*unstructured.Unstructured, log func(string, ...any)) error {
	for _, u := range objs {
		u.SetResourceVersion("")
		u.SetManagedFields(nil)
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
			return fmt.Errorf("failed to apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		log("applied", "kind", u.GetKind(), "name", u.GetName(), "fieldManager", manager)
	}
	return nil
}

// DeleteAndWait deletes one object in the foreground (its dependents first) and waits
// until it is gone; absent is done.
func DeleteAndWait(ctx context.Context, c client.Client, u *unstructured.Unstructured, every time.Duration) error {
	key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	err := c.Delete(ctx, u, client.PropagationPolicy("Foreground"))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to delete %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	for {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		if err := c.Get(ctx, key, cur); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("failed to delete %s %s: still there after the timeout (%w)", u.GetKind(), u.GetName(), ctx.Err())
		case <-time.After(every):
		}
	}
}

type program struct {
	name    string
	common  boot.Common
	timeout time.Duration
}

func (p *program) parse(args []string, extra func(*flag.FlagSet)) (client.Client, context.Context, context.CancelFunc, func(string, ...any), []string, error) {
	fs := flag.NewFlagSet(p.name, flag.ContinueOnError)
	p.common.Bind(fs)
	fs.DurationVar(&p.timeout, "timeout", 3*time.Minute, "give up after this long")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	log := p.common.Start(p.name)
	cfg, err := p.common.RestConfig()
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: boot.Scheme()})
	if err != nil {
		return nil, nil, nil, nil, nil, fmt.Errorf("failed to build API client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	return c, ctx, cancel, func(msg string, kv ...any) { log.Info(msg, kv...) }, fs.Args(), nil
}

// CRDUpgrader runs `kai-standin crd-upgrader <file or folder>...`: the CRDs applied
// server-side, as KAI's pre-install/pre-upgrade crd-upgrader Job does.
func CRDUpgrader(args []string) error {
	p := &program{name: "crd-upgrader"}
	c, ctx, cancel, log, rest, err := p.parse(args, nil)
	if err != nil {
		return err
	}
	defer cancel()
	objs, err := ReadManifests(rest)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("failed to upgrade CRDs: %s %s is not a CRD", u.GetKind(), u.GetName())
		}
	}
	return Apply(ctx, c, "kai-crd-upgrader", objs, log)
}

// ConfigDeployer runs `kai-standin config-deployer <file or folder>...`: kai-config
// applied server-side with field manager kai-config-deployer, conflicts forced.
func ConfigDeployer(args []string) error {
	p := &program{name: "config-deployer"}
	c, ctx, cancel, log, rest, err := p.parse(args, nil)
	if err != nil {
		return err
	}
	defer cancel()
	objs, err := ReadManifests(rest)
	if err != nil {
		return err
	}
	objs = Deployed(objs, p.common.Faults, log)
	return Apply(ctx, c, "kai-config-deployer", objs, log)
}

// Deployed is what the post-install/post-upgrade hook applies: everything, unless the
// missing-kai-config fault is on (KAI #1751: an ArgoCD sync that ran no hook left the
// cluster without Config kai-config while helm's side read as deployed). Then Config
// kai-config is left out and the Job still succeeds.
func Deployed(objs []*unstructured.Unstructured, on faults.Set, log func(string, ...any)) []*unstructured.Unstructured {
	if !on.Has(faults.MissingKaiConfig) {
		return objs
	}
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "Config" && u.GroupVersionKind().Group == "kai.scheduler" && u.GetName() == "kai-config" {
			log("Stand-in fault missing-kai-config: Config not applied", "kind", u.GetKind(), "name", u.GetName())
			continue
		}
		out = append(out, u)
	}
	return out
}

// ConfigCleanup runs `kai-standin config-cleanup`: Config kai-config deleted in the
// foreground, so that the components, Services, certificate Secret and webhook
// registrations it owns are gone when the Job ends.
func ConfigCleanup(args []string) error {
	p := &program{name: "config-cleanup"}
	var name string
	c, ctx, cancel, log, _, err := p.parse(args, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "config", "kai-config", "the Config to remove")
	})
	if err != nil {
		return err
	}
	defer cancel()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kai.scheduler/v1")
	u.SetKind("Config")
	u.SetName(name)
	if err := DeleteAndWait(ctx, c, u, time.Second); err != nil {
		return err
	}
	log("removed Config and what it owns", "name", name)
	return nil
}
