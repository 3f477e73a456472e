package accountsecret_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/auth"
	"tilecache/internal/auth/accountsecret"
	"tilecache/internal/config"
)

// The package's tests share one moto_server (the AWS emulator the local
// stack runs for CloudFront; it answers SSM and Secrets Manager as well),
// started by the first test that needs it and stopped by TestMain.
var emulator struct {
	once     sync.Once
	cmd      *exec.Cmd
	endpoint string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if emulator.cmd != nil {
		emulator.cmd.Process.Kill()
		emulator.cmd.Wait()
	}
	os.Exit(code)
}

// moto returns the endpoint of moto_server on a free port of 127.0.0.1, or
// skips when it is not installed (TILECACHE_MOTO_SERVER names it when it
// is not on PATH).
func moto(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TILECACHE_MOTO_SERVER")
	if bin == "" {
		bin = "moto_server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Skipf("moto_server is not installed (%v): it stands in for SSM and Secrets Manager", err)
	}
	emulator.once.Do(func() { emulator.endpoint, emulator.err = startMoto(path) })
	if emulator.err != nil {
		t.Fatal(emulator.err)
	}
	return emulator.endpoint
}

func startMoto(path string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	emulator.cmd = cmd
	// The server says when it listens: " * Running on http://127.0.0.1:PORT".
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Running on") {
			go func() {
				for sc.Scan() { // keep the pipe drained
				}
			}()
			return fmt.Sprintf("http://127.0.0.1:%d", port), nil
		}
	}
	return "", fmt.Errorf("moto_server ended before it listened: %v", sc.Err())
}

func awsConfig() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
}

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// accounts returns accounts-file entries for an admin and a user-role
// account, separated by a newline and a space as an operator may paste
// them.
func accounts(t *testing.T) string {
	t.Helper()
	a, err := auth.HashPassword("admin pass", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.HashPassword("viewer pass", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return "admin:" + a + "\n viewer:" + v + ":user"
}

func putParameter(t *testing.T, endpoint, name, value string) string {
	t.Helper()
	c := ssm.NewFromConfig(awsConfig(), func(o *ssm.Options) { o.BaseEndpoint = aws.String(endpoint) })
	if _, err := c.PutParameter(t.Context(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetParameter(t.Context(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Parameter.ARN)
}

func TestReadSSMSecureString(t *testing.T) {
	endpoint := moto(t)
	want := accounts(t)
	arn := putParameter(t, endpoint, "/tilecache/read-accounts", want)
	got, err := accountsecret.Read(t.Context(), awsConfig(), lookup(map[string]string{"AWS_ENDPOINT_URL_SSM": endpoint}), arn)
	if err != nil || got != want {
		t.Fatalf("Read(%s): %q, %v; want %q", arn, got, err, want)
	}
	missing := strings.Replace(arn, "/tilecache/read-accounts", "/tilecache/none", 1)
	if _, err := accountsecret.Read(t.Context(), awsConfig(), lookup(map[string]string{"AWS_ENDPOINT_URL_SSM": endpoint}), missing); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "ParameterNotFound") {
		t.Errorf("Read of a missing parameter: %v, want an error naming it and ParameterNotFound", err)
	}
}

func TestReadSecretsManager(t *testing.T) {
	endpoint := moto(t)
	want := accounts(t)
	c := secretsmanager.NewFromConfig(awsConfig(), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(endpoint) })
	out, err := c.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String("tilecache-accounts"), SecretString: aws.String(want)})
	if err != nil {
		t.Fatal(err)
	}
	// AWS_ENDPOINT_URL serves every service without its own variable.
	env := lookup(map[string]string{"AWS_ENDPOINT_URL": endpoint})
	got, err := accountsecret.Read(t.Context(), awsConfig(), env, aws.ToString(out.ARN))
	if err != nil || got != want {
		t.Fatalf("Read(%s): %q, %v; want %q", aws.ToString(out.ARN), got, err, want)
	}
	bin, err := c.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String("tilecache-binary"), SecretBinary: []byte(want)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := accountsecret.Read(t.Context(), awsConfig(), env, aws.ToString(bin.ARN)); err == nil || !strings.Contains(err.Error(), "no SecretString") {
		t.Errorf("Read of a binary secret: %v, want an error saying it holds no SecretString", err)
	}
}

func TestParseARN(t *testing.T) {
	for s, service := range map[string]string{
		"arn:aws:ssm:eu-west-1:123456789012:parameter/tilecache/accounts":                "ssm",
		"arn:aws-cn:ssm:cn-north-1:123456789012:parameter/accounts":                      "ssm",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:tilecache-accounts-AbCdEf": "secretsmanager",
		"arn:aws:ssm:eu-west-1:123456789012:parameter/":                                  "",
		"arn:aws:ssm:eu-west-1:123456789012:document/x":                                  "",
		"arn:aws:s3:::bucket/accounts":                                                   "",
		"/tilecache/accounts":                                                            "",
		"admin:$2a$04$abc":                                                               "",
	} {
		p, err := accountsecret.ParseARN(s)
		if p.Service != service || (err == nil) != (service != "") {
			t.Errorf("ParseARN(%q): %+v, %v; want service %q", s, p, err, service)
		}
		if err != nil && !strings.Contains(err.Error(), "parameter/NAME") {
			t.Errorf("ParseARN(%q): %v; want the forms it takes named", s, err)
		}
	}
}

// TestLoadAccountsFromSecret: a program whose TILECACHE_ACCOUNTS_SECRET
// names a SecureString reads its accounts from it at start (ApiFunction's
// way); it must not be set beside TILECACHE_ACCOUNTS.
func TestLoadAccountsFromSecret(t *testing.T) {
	endpoint := moto(t)
	arn := putParameter(t, endpoint, "/tilecache/api-accounts", accounts(t))
	// awsconf.Load reads credentials the SDK's way, from the process.
	dir := t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v) // restored after the test
		if v == "" {
			os.Unsetenv(k)
		}
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_ACCOUNTS_SECRET": arn, "AWS_ENDPOINT_URL_SSM": endpoint} // region: awsconf's us-east-1
	cfg, err := config.Load(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	users, err := app.LoadAccounts(t.Context(), cfg)
	if err != nil {
		t.Fatalf("LoadAccounts with TILECACHE_ACCOUNTS_SECRET=%s: %v", arn, err)
	}
	srv := httptest.NewServer(users.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	for _, c := range []struct {
		user, password string
		want           int
	}{{"admin", "admin pass", 200}, {"viewer", "viewer pass", 403}, {"admin", "wrong", 401}} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		req.SetBasicAuth(c.user, c.password)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s/%s: %d, want %d", c.user, c.password, res.StatusCode, c.want)
		}
	}

	env["TILECACHE_ACCOUNTS"] = "admin:$2a$04$x"
	if _, err := config.Load(lookup(env)); err == nil || !strings.Contains(err.Error(), "TILECACHE_ACCOUNTS_SECRET and TILECACHE_ACCOUNTS are both set") {
		t.Errorf("both set: %v, want an error naming both", err)
	}
	delete(env, "TILECACHE_ACCOUNTS")
	env["TILECACHE_ACCOUNTS_SECRET"] = strings.Replace(arn, "api-accounts", "gone", 1)
	cfg, err = config.Load(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.LoadAccounts(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "TILECACHE_ACCOUNTS_SECRET") || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a missing parameter: %v, want an error naming the variable and the parameter", err)
	}
}
