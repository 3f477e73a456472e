package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CreateTable creates table as the package comment describes (the same
// design as the provisioning script), waits until it is ACTIVE and enables
// TTL on expires, best-effort (some emulators lack it). For tests and local
// set-ups.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	s := New(client, table).s // for its call options
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &table,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrGSIPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrGSISK), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(aLRU), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(aLFU), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(indexActive),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrGSIPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrGSISK), KeyType: types.KeyTypeRange},
			},
			// The status attributes only (listed.go).
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: listedAttrs},
		}, orderIndex(indexLRU, aLRU), orderIndex(indexLFU, aLFU)},
	}, s.callOpts...)
	if err != nil {
		return s.fail(ctx, err, "create DynamoDB table %s", table)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 2 * time.Second
		o.ClientOptions = append(o.ClientOptions, s.callOpts...)
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 5*time.Minute); err != nil {
		return s.fail(ctx, err, "wait for DynamoDB table %s", table)
	}
	client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpires),
			Enabled:       aws.Bool(true),
		},
	}, s.callOpts...)
	return nil
}

// orderIndex is the index keeping each layer's pages partition sorted by
// one policy's order key (usageorder.go).
func orderIndex(name, sortKey string) types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(name),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}
