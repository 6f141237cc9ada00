package core

import (
	"context"

	"github.com/google/uuid"

	"github.com/procsvc/procsvc/ent"
	"github.com/procsvc/procsvc/ent/category"
	"github.com/procsvc/procsvc/ent/member"
	"github.com/procsvc/procsvc/ent/project"
	"github.com/procsvc/procsvc/internal/apperr"
)

// checkRefs confirms that the referenced category, doer (a current member)
// and project exist in the viewer's workspace (the tenancy interceptor hides
// all others), naming every offending field otherwise. It returns the
// project's name, which procedures keep a copy of for sorting.
//
// Writes run it with tx.Client() inside their transaction, after the
// workspace lock: a category or project deleted, or a doer removed, while
// the write waited is then refused like a sequential execution would refuse
// it (validation_failed naming the field), never stored (a removed doer) or
// answered as a bare foreign-key conflict, and the project name copied is
// the name as of the write. It may also run before the transaction to fail
// fast ahead of costly work (content generation), never instead.
func checkRefs(ctx context.Context, c *ent.Client, categoryID, doerID, projectID *uuid.UUID) (projectName string, err error) {
	val := &apperr.Validation{}
	if categoryID != nil {
		ok, err := c.Category.Query().Where(category.ID(*categoryID)).Exist(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if !ok {
			val.Add("categoryId", "no such category in this workspace")
		}
	}
	if doerID != nil {
		ok, err := c.Member.Query().Where(member.ID(*doerID), member.RemovedAtIsNil()).Exist(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if !ok {
			val.Add("doerId", "no such member in this workspace")
		}
	}
	if projectID != nil {
		names, err := c.Project.Query().Where(project.ID(*projectID)).Select(project.FieldName).Strings(ctx)
		if err != nil {
			return "", apperr.Map(err)
		}
		if len(names) == 0 {
			val.Add("projectId", "no such project in this workspace")
		} else {
			projectName = names[0]
		}
	}
	return projectName, val.Err()
}
