package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/procsvc/procsvc/internal/core"
	"github.com/procsvc/procsvc/internal/events"
	"github.com/procsvc/procsvc/internal/timefmt"
)

// withService parses args into fs, which gets --database-url; if check
// (when given) passes, it opens the database and runs do with the core.
func withService(ctx context.Context, fs *flag.FlagSet, args []string, env Env, check func() error, do func(context.Context, *core.Service) error) error {
	var d DBFlags
	d.Bind(fs)
	if err := Parse(fs, args); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	db, err := d.Open(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	// On PostgreSQL the operator's changes are announced as the server's
	// are (LISTEN/NOTIFY): a token revoked or a member removed here cuts
	// their open subscriptions on every replica at once. A SQLite file has
	// no such channel; a running server notices within its re-check
	// interval (--subscription-recheck).
	var opts []core.Option
	if db.Dialect == "postgres" {
		opts = append(opts, core.WithAnnouncer(events.NewPostgresAnnouncer(events.NewHub(events.HubOptions{}))),
			core.WithLockPolicy(core.LockPolicyFor(db.Dialect)))
	}
	return do(ctx, core.New(db.Client, opts...))
}

// asAdmin is withService for the commands on one workspace: fs gets
// --workspace too, and do acts as an admin of it.
func asAdmin(ctx context.Context, fs *flag.FlagSet, args []string, env Env, do func(context.Context, *core.Service) error) error {
	workspace := fs.String("workspace", "", "workspace id (required)")
	required := func() error {
		if *workspace == "" {
			return errors.New("--workspace is required (see procsvc workspace list)")
		}
		return nil
	}
	return withService(ctx, fs, args, env, required, func(ctx context.Context, svc *core.Service) error {
		actx, err := svc.ActAsAdmin(ctx, *workspace)
		if err != nil {
			return err
		}
		return do(actx, svc)
	})
}

func workspaceCreate(ctx context.Context, args []string, env Env) error {
	var in core.NewWorkspace
	fs := FlagSet("procsvc workspace create", "Creates a workspace with an ADMIN member and prints the admin's token once.", env)
	fs.StringVar(&in.Name, "name", "", "workspace name (required)")
	fs.StringVar(&in.Key, "key", "PRC", "shortId prefix, 2–10 letters")
	fs.StringVar(&in.AdminName, "admin-name", "Admin", "the admin member's name")
	fs.StringVar(&in.AdminEmail, "admin-email", "", "the admin member's email (required)")
	return withService(ctx, fs, args, env, nil, func(ctx context.Context, svc *core.Service) error {
		b, err := svc.CreateWorkspace(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "workspace: %s\nadmin:     %s (%s)\ntoken:     %s\n", b.Workspace.ID, b.Admin.ID, b.Admin.Email, b.Secret)
		return nil
	})
}

func workspaceList(ctx context.Context, args []string, env Env) error {
	fs := FlagSet("procsvc workspace list", "Lists every workspace.", env)
	return withService(ctx, fs, args, env, nil, func(ctx context.Context, svc *core.Service) error {
		ws, err := svc.Workspaces(ctx)
		if err != nil {
			return err
		}
		tw := table(env, "ID\tKEY\tNAME\tCREATED")
		for _, w := range ws {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.ID, w.Key, w.Name, timefmt.Format(w.CreatedAt))
		}
		return tw.Flush()
	})
}

func memberAdd(ctx context.Context, args []string, env Env) error {
	var name, email, role string
	fs := FlagSet("procsvc member add", "Adds a member to a workspace.", env)
	fs.StringVar(&name, "name", "", "member name (required)")
	fs.StringVar(&email, "email", "", "member email, unique in the workspace (required)")
	fs.StringVar(&role, "role", "MEMBER", "ADMIN, MEMBER or VIEWER")
	return asAdmin(ctx, fs, args, env, func(ctx context.Context, svc *core.Service) error {
		m, err := svc.AddMember(ctx, core.MemberInput{Name: core.Some(name), Email: core.Some(email), Role: core.Some(strings.ToUpper(role))})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "member: %s (%s, %s)\n", m.ID, m.Email, m.Role)
		return nil
	})
}

// memberPageSize is how many members member list reads at a time: it
// pages by cursor through the whole list, as a GraphQL client would, since
// core caps a page at MaxListPageSize. A variable for its test.
var memberPageSize = core.MaxListPageSize

func memberList(ctx context.Context, args []string, env Env) error {
	fs := FlagSet("procsvc member list", "Lists a workspace's current members, by name (their ids are what token create --member takes).", env)
	return asAdmin(ctx, fs, args, env, func(ctx context.Context, svc *core.Service) error {
		tw := table(env, "ID\tNAME\tEMAIL\tROLE")
		size := memberPageSize
		w := core.Window{First: &size}
		for {
			page, err := svc.FindMembers(ctx, core.ListFilter{}, w)
			if err != nil {
				return err
			}
			for _, m := range page.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.ID, m.Name, m.Email, m.Role)
			}
			if !page.PageInfo.HasNextPage || len(page.Items) == 0 {
				break
			}
			after := page.Cursor(page.Items[len(page.Items)-1])
			w.After = &after
		}
		return tw.Flush()
	})
}

func tokenCreate(ctx context.Context, args []string, env Env) error {
	var memberID, name string
	var expiresIn lifetime
	fs := FlagSet("procsvc token create", "Issues a token for a member and prints its secret once.", env)
	fs.StringVar(&memberID, "member", "", "member id (default: the workspace's first admin; see procsvc member list)")
	fs.StringVar(&name, "name", "", "a label for the token")
	fs.Var(&expiresIn, "expires-in", "lifetime: days (30d, 1d12h) or a Go duration (36h, 90m); default: no expiry")
	return asAdmin(ctx, fs, args, env, func(ctx context.Context, svc *core.Service) error {
		in := core.TokenInput{MemberID: memberID, Name: name}
		if expiresIn.d != 0 {
			t := time.Now().UTC().Add(expiresIn.d)
			in.ExpiresAt = &t
		}
		t, secret, err := svc.CreateToken(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "token:  %s\nsecret: %s\n", t.ID, secret)
		return nil
	})
}

func tokenList(ctx context.Context, args []string, env Env) error {
	fs := FlagSet("procsvc token list", "Lists a workspace's tokens (never their secrets).", env)
	return asAdmin(ctx, fs, args, env, func(ctx context.Context, svc *core.Service) error {
		ts, err := svc.Tokens(ctx)
		if err != nil {
			return err
		}
		tw := table(env, "ID\tMEMBER\tNAME\tCREATED\tEXPIRES\tREVOKED")
		for _, t := range ts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.MemberID, t.Name, timefmt.Format(t.CreatedAt), orDash(t.ExpiresAt), orDash(t.RevokedAt))
		}
		return tw.Flush()
	})
}

// table starts a listing on env.Stdout with its tab-separated header; the
// caller writes a line a row and flushes.
func table(env Env, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

func orDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return timefmt.Format(*t)
}

func tokenRevoke(ctx context.Context, args []string, env Env) error {
	var id string
	fs := FlagSet("procsvc token revoke", "Revokes a token; requests with it then answer disconnected.", env)
	fs.StringVar(&id, "id", "", "token id (required)")
	return asAdmin(ctx, fs, args, env, func(ctx context.Context, svc *core.Service) error {
		t, err := svc.RevokeToken(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "revoked: %s at %s\n", t.ID, orDash(t.RevokedAt))
		return nil
	})
}
