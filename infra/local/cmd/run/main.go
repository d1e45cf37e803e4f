// Command run starts the local stack: a DynamoDB-compatible endpoint with
// the table of template.yaml. With AWS_ENDPOINT_URL_DYNAMODB set it uses that
// endpoint instead, creating the table there when it is missing.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cloud-agent/control-plane/infra/local"
)

func main() {
	template := flag.String("template", "template.yaml", "the SAM template")
	dynamoAddr := flag.String("dynamo-addr", "127.0.0.1:8000", "address of the embedded DynamoDB endpoint")
	flag.Parse()
	if err := run(*template, *dynamoAddr); err != nil {
		log.Fatal(err)
	}
}

func run(templatePath, dynamoAddr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tpl, err := local.LoadTemplate(templatePath)
	if err != nil {
		return err
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if endpoint == "" {
		d, err := local.StartDynamo(dynamoAddr)
		if err != nil {
			return fmt.Errorf("starting the embedded DynamoDB endpoint: %w", err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = d.Close(sctx)
		}()
		endpoint = d.URL
		fmt.Printf("DynamoDB endpoint (embedded, in memory): %s\n", endpoint)
	} else {
		fmt.Printf("DynamoDB endpoint (AWS_ENDPOINT_URL_DYNAMODB): %s\n", endpoint)
	}
	in, err := local.CreateTableInput(tpl, local.TableLogicalID, local.TableLogicalID)
	if err != nil {
		return err
	}
	created, err := local.EnsureTable(ctx, local.DynamoClient(endpoint), in)
	if err != nil {
		return err
	}
	verb := "exists"
	if created {
		verb = "created from " + templatePath
	}
	fmt.Printf("Table %s: %s\n", local.TableLogicalID, verb)
	fmt.Printf("Try: aws dynamodb describe-table --table-name %s --endpoint-url %s --region us-east-1\n", local.TableLogicalID, endpoint)
	fmt.Println("Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Println("Stopping.")
	return nil
}
