package devserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seckill/seckill/store"
)

// Postgres keeps the embedded server's state in PostgreSQL: two databases
// of its own (history and visibility), created and set up with Temporal's
// own schema tooling when missing, so workflows survive a restart of the
// process. One embedded server per pair of databases: it takes the
// cluster's membership over at start.
type Postgres struct {
	// HistoryURL names the database of the server's state; VisibilityURL
	// that of its visibility records (workflow lists, search attributes).
	// Both postgres:// URLs, on one server with one user.
	HistoryURL    string
	VisibilityURL string
	// MaxConns bounds each connection pool the server opens [4]. The
	// server's services (frontend, history, matching, worker) each open
	// one per database: at most 8 x MaxConns connections in all.
	MaxConns int
}

// Schemas of the postgres12 plugin, as the server module embeds them.
const (
	historySchema    = "postgresql/v12/temporal"
	visibilitySchema = "postgresql/v12/visibility"
)

// sqlConfig is the server's SQL configuration of the database dsn names.
func (p *Postgres) sqlConfig(dsn string) (*config.SQL, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("temporal database URL: %w", err)
	}
	return &config.SQL{
		PluginName:      pgplugin.PluginNamePGX,
		DatabaseName:    cfg.Database,
		ConnectAddr:     net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		ConnectProtocol: "tcp",
		User:            cfg.User,
		Password:        cfg.Password,
		MaxConns:        p.MaxConns,
		MaxIdleConns:    p.MaxConns,
		MaxConnLifetime: time.Hour,
	}, nil
}

// Names are the two databases' names, for messages.
func (p *Postgres) Names() (history, visibility string) {
	name := func(dsn string) string {
		if cfg, err := pgconn.ParseConfig(dsn); err == nil {
			return cfg.Database
		}
		return dsn
	}
	return name(p.HistoryURL), name(p.VisibilityURL)
}

// setup creates both databases when missing and brings their schemas to
// the versions this server needs (setup-schema -v 0.0, then
// update-schema, as temporal-sql-tool does; its RunTool exits the process
// on failure, so the same steps are called directly).
func (p *Postgres) setup(ctx context.Context, logger log.Logger) error {
	if p.MaxConns <= 0 {
		p.MaxConns = 4
	}
	for _, db := range []struct{ dsn, schema string }{{p.HistoryURL, historySchema}, {p.VisibilityURL, visibilitySchema}} {
		if err := store.EnsureDatabase(ctx, db.dsn); err != nil {
			return err
		}
		sqlCfg, err := p.sqlConfig(db.dsn)
		if err != nil {
			return err
		}
		conn, err := sqltool.NewConnection(sqlCfg, logger)
		if err != nil {
			return fmt.Errorf("connect to database %s: %w", sqlCfg.DatabaseName, err)
		}
		err = func() error {
			defer conn.Close()
			if _, err := conn.ReadSchemaVersion(); err != nil {
				// A new database: the version tables first.
				if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
					return fmt.Errorf("set up schema versioning: %w", err)
				}
			}
			if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: sqlCfg.DatabaseName, SchemaName: db.schema}, logger).Run(); err != nil {
				return fmt.Errorf("update schema %s: %w", db.schema, err)
			}
			if db.schema == historySchema {
				// This server is the cluster's only host. The membership rows
				// a killed process left behind name hosts that are gone; kept,
				// they route task queues and shards to the dead host until
				// failure detection drops it (tens of seconds, seen here: a
				// signal sent after a kill -9 was not processed within 30 s).
				if err := conn.Exec(`DELETE FROM cluster_membership`); err != nil {
					return fmt.Errorf("forget the members of earlier runs: %w", err)
				}
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("database %s: %w", sqlCfg.DatabaseName, err)
		}
	}
	return nil
}

// registerNamespaces creates each namespace (unless it exists) through the
// frontend, with seckill's search attributes, and waits until a workflow
// can be started in it: the SQLite store's CreateNamespaces has no
// PostgreSQL counterpart.
func registerNamespaces(ctx context.Context, address string, tlsCfg *tls.Config, namespaces []string, attrs map[string]enumspb.IndexedValueType) error {
	c, err := sdkclient.DialContext(ctx, sdkclient.Options{HostPort: address, Logger: quietLogger{}, ConnectionOptions: sdkclient.ConnectionOptions{TLS: tlsCfg}})
	if err != nil {
		return fmt.Errorf("dial the embedded server: %w", err)
	}
	defer c.Close()
	for _, ns := range namespaces {
		for {
			_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
				Namespace:                        ns,
				WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
			})
			var exists *serviceerror.NamespaceAlreadyExists
			var busy *serviceerror.ResourceExhausted
			if errors.As(err, &busy) {
				// The frontend rate-limits namespace registration (tests
				// register dozens at once): wait and try again.
				select {
				case <-ctx.Done():
					return fmt.Errorf("register namespace %s: %w", ns, err)
				case <-time.After(100 * time.Millisecond):
					continue
				}
			}
			if err != nil && !errors.As(err, &exists) {
				return fmt.Errorf("register namespace %s: %w", ns, err)
			}
			break
		}
	}
	for _, ns := range namespaces {
		if err := waitNamespace(ctx, c, ns); err != nil {
			return err
		}
		if len(attrs) == 0 {
			continue
		}
		list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		if err != nil {
			return fmt.Errorf("list search attributes of %s: %w", ns, err)
		}
		missing := map[string]enumspb.IndexedValueType{}
		for name, typ := range attrs {
			if _, ok := list.GetCustomAttributes()[name]; !ok {
				missing[name] = typ
			}
		}
		if len(missing) == 0 {
			continue
		}
		if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: ns, SearchAttributes: missing,
		}); err != nil {
			return fmt.Errorf("add search attributes to %s: %w", ns, err)
		}
	}
	return nil
}

// waitNamespace waits until a workflow can be started in namespace ns: a
// namespace registered a moment ago reaches the services' caches on their
// next refresh. The probe is a workflow no worker polls for, terminated at
// once (it shows in the UI as seckill-ready-probe).
func waitNamespace(ctx context.Context, c sdkclient.Client, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		_, err := c.WorkflowService().StartWorkflowExecution(ctx, &workflowservice.StartWorkflowExecutionRequest{
			Namespace:                ns,
			WorkflowId:               "seckill-ready-probe",
			WorkflowType:             &commonpb.WorkflowType{Name: "seckill-ready-probe"},
			TaskQueue:                &taskqueuepb.TaskQueue{Name: "seckill-ready-probe"},
			WorkflowExecutionTimeout: durationpb.New(time.Second),
			RequestId:                uuid.NewString(),
			WorkflowIdReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowIdConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		})
		if err == nil {
			_, _ = c.WorkflowService().TerminateWorkflowExecution(ctx, &workflowservice.TerminateWorkflowExecutionRequest{
				Namespace: ns, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: "seckill-ready-probe"}, Reason: "start-up probe",
			})
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s not usable after 60s: %w", ns, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// quietLogger drops the SDK client's logs: the devserver reports its own
// errors.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// PostgresFromURL derives the embedded server's databases from seckill's
// DATABASE_URL: the same server and credentials, and the databases
// store.TemporalDatabaseURLs names.
func PostgresFromURL(databaseURL string) (*Postgres, error) {
	history, visibility, err := store.TemporalDatabaseURLs(databaseURL)
	if err != nil {
		return nil, err
	}
	return &Postgres{HistoryURL: history, VisibilityURL: visibility}, nil
}
