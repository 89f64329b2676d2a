// expect: none
// A print under an if inside the loop may run once only: not flagged.
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 0;
        for (int i = 1; i <= 100; i++) {
            sum += i;
            if (i == 100) {
                System.out.println(sum);
            }
        }
    }
}
