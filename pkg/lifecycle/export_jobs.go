package lifecycle

import batchv1 "k8s.io/api/batch/v1"

// exportCronJobs are the release's jobs as manifests without a namespace;
// without the config their pods start without its Secret, as the
// Deployments' do.
func exportCronJobs(cjs []*batchv1.CronJob, includeConfig bool) []any {
	var out []any
	for _, cj := range cjs {
		cj.Namespace = ""
		if !includeConfig {
			spec := &cj.Spec.JobTemplate.Spec.Template.Spec
			for i := range spec.Containers {
				for _, ef := range spec.Containers[i].EnvFrom {
					if ef.SecretRef != nil {
						ef.SecretRef.Optional = new(true)
					}
				}
			}
		}
		out = append(out, cj)
	}
	return out
}
