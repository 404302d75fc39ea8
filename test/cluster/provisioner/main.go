// Command provisioner is the local cluster's dynamic volume provisioner: a
// host process (started and stopped by cluster.sh, like the registry) that
// gives every PersistentVolumeClaim of a StorageClass whose provisioner is
// tug.dev/local-path a hostPath PersistentVolume on a new directory of this
// machine, and removes the directory when the claim is deleted (reclaim
// policy Delete). Both nodes of the local cluster run on this machine, so a
// hostPath serves a unit on either node.
//
//	provisioner -kubeconfig FILE -dir DIR
//
// It follows the external provisioner protocol the PersistentVolume
// controller speaks: the controller leaves a claim of such a class Pending;
// a PersistentVolume whose claimRef names the claim (with its UID) is then
// bound to it by the controller. It holds no state of its own: a restart
// lists every claim and volume again, so a claim made while it was down is
// provisioned, and a released volume is removed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// Name is the provisioner a StorageClass names to be served here.
	Name = "tug.dev/local-path"
	// annProvisionedBy marks a volume as made by a provisioner, the
	// annotation the PersistentVolume controller and kubectl read.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// annSelectedNode is set by the scheduler on a claim of a
	// WaitForFirstConsumer class once its pod has a node.
	annSelectedNode = "volume.kubernetes.io/selected-node"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	dir := flag.String("dir", "", "folder the volumes' directories are made in")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: provisioner -kubeconfig FILE -dir DIR")
		os.Exit(2)
	}
	log.SetFlags(log.LstdFlags | log.LUTC)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *dir); err != nil {
		log.Fatalf("provisioner: %v", err)
	}
}

func run(ctx context.Context, kubeconfig, dir string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	// The resync retries what failed (an apiserver that did not answer, a
	// directory that could not be removed): both handlers are idempotent.
	f := informers.NewSharedInformerFactory(client, 30*time.Second)
	p := &provisioner{client: client, root: root, classes: f.Storage().V1().StorageClasses().Lister()}
	claims := f.Core().V1().PersistentVolumeClaims().Informer()
	volumes := f.Core().V1().PersistentVolumes().Informer()
	onClaim := func(obj any) {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			p.claim(ctx, c)
		}
	}
	onVolume := func(obj any) {
		if v, ok := obj.(*corev1.PersistentVolume); ok {
			p.volume(ctx, v)
		}
	}
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onClaim, UpdateFunc: func(_, o any) { onClaim(o) }}); err != nil {
		return err
	}
	if _, err := volumes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onVolume, UpdateFunc: func(_, o any) { onVolume(o) }}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v cache did not sync", typ)
		}
	}
	log.Printf("provisioner %s: serving, volumes in %s", Name, root)
	<-ctx.Done()
	f.Shutdown()
	return nil
}

type provisioner struct {
	client  kubernetes.Interface
	root    string
	classes storagelisters.StorageClassLister
}

// claim provisions a volume for c when it is ours and still needs one.
func (p *provisioner) claim(ctx context.Context, c *corev1.PersistentVolumeClaim) {
	class := p.classFor(c)
	if class == nil || !needsVolume(c, class) {
		return
	}
	pv, err := p.provision(c, class)
	if err != nil {
		log.Printf("claim %s/%s: %v", c.Namespace, c.Name, err)
		return
	}
	_, err = p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		log.Printf("claim %s/%s: creating volume %s: %v", c.Namespace, c.Name, pv.Name, err)
	default:
		log.Printf("claim %s/%s: volume %s at %s", c.Namespace, c.Name, pv.Name, pv.Spec.HostPath.Path)
	}
}

// classFor is c's StorageClass when this provisioner serves it.
func (p *provisioner) classFor(c *corev1.PersistentVolumeClaim) *storagev1.StorageClass {
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName == "" {
		return nil
	}
	class, err := p.classes.Get(*c.Spec.StorageClassName)
	if err != nil || class.Provisioner != Name {
		return nil
	}
	return class
}

// needsVolume: a Pending claim with no volume, which dynamic provisioning
// serves (a claim with a selector asks for an existing volume), and, for a
// WaitForFirstConsumer class, once the scheduler picked its node.
func needsVolume(c *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) bool {
	if c.DeletionTimestamp != nil || c.Spec.VolumeName != "" || c.Status.Phase != corev1.ClaimPending || c.Spec.Selector != nil {
		return false
	}
	if c.Spec.VolumeMode != nil && *c.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return false
	}
	if class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		return c.Annotations[annSelectedNode] != ""
	}
	return true
}

// provision makes the claim's directory and returns its volume. The
// directory is world-writable: a hostPath ignores fsGroup, and the units
// that mount it run as users of their own (postgres as 999).
func (p *provisioner) provision(c *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) (*corev1.PersistentVolume, error) {
	name := "pvc-" + string(c.UID)
	path := filepath.Join(p.root, name)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o777); err != nil { // MkdirAll's mode is cut by the umask
		return nil, err
	}
	return volumeFor(c, class, name, path), nil
}

// volumeFor is the PersistentVolume for claim c at path, bound to it by
// its claimRef.
func volumeFor(c *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, name, path string) *corev1.PersistentVolume {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: Name},
			Labels:      map[string]string{"tug.dev/local-cluster": "true"},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			StorageClassName:              class.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    c.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: new(corev1.HostPathDirectory)},
			},
		},
	}
}

// volume removes v and its directory once its claim is gone, when it is
// ours and its policy says Delete.
func (p *provisioner) volume(ctx context.Context, v *corev1.PersistentVolume) {
	if v.Annotations[annProvisionedBy] != Name || v.Status.Phase != corev1.VolumeReleased ||
		v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || v.DeletionTimestamp != nil {
		return
	}
	path, ok := p.ownPath(v)
	if !ok {
		log.Printf("volume %s: not removing %v: not a directory under %s", v.Name, v.Spec.HostPath, p.root)
		return
	}
	if err := os.RemoveAll(path); err != nil {
		log.Printf("volume %s: removing %s: %v", v.Name, path, err)
		return
	}
	err := p.client.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &v.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Printf("volume %s: deleting: %v", v.Name, err)
		return
	}
	log.Printf("volume %s: claim %s/%s gone, removed with %s", v.Name, v.Spec.ClaimRef.Namespace, v.Spec.ClaimRef.Name, path)
}

// ownPath is v's directory when it is one this provisioner made: directly
// under its root and named after the volume. Nothing else is ever removed,
// whatever a volume object says.
func (p *provisioner) ownPath(v *corev1.PersistentVolume) (string, bool) {
	if v.Spec.HostPath == nil || v.Spec.ClaimRef == nil {
		return "", false
	}
	path := filepath.Clean(v.Spec.HostPath.Path)
	if filepath.Dir(path) != p.root || filepath.Base(path) != v.Name || !strings.HasPrefix(v.Name, "pvc-") {
		return "", false
	}
	return path, true
}
