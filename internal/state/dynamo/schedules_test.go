package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/schedule/scheduletest"
)

// TestScheduleConformance runs the schedule suite with every store in a
// namespace of one table.
func TestScheduleConformance(t *testing.T) {
	testClient(t)
	sh := newShared(t)
	scheduletest.Run(t, func(t *testing.T) scheduletest.Stores { return sh.store(t) },
		func(t *testing.T, st scheduletest.Stores, name string) {
			// A definition that is not JSON; its next due time is intact.
			s := st.(*adapters)
			e := newExpr()
			_, err := s.client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
				TableName:                 &s.table,
				Key:                       s.scheduleKey(name),
				UpdateExpression:          aws.String("SET " + e.n(aSchedDef) + " = " + e.v(str(`{"name":`))),
				ExpressionAttributeNames:  e.Names(),
				ExpressionAttributeValues: e.Values(),
			})
			if err != nil {
				t.Fatal(err)
			}
		})
}
