// expect: none
// The bound comes from input: the analysis cannot be sure, so nothing is flagged.
import java.util.Scanner;

public class SumCalculator {
    public static void main(String[] args) {
        int n = new Scanner(System.in).nextInt();
        int sum = 0;
        for (int i = 1; i < n; i++) {
            sum += i;
        }
        System.out.println(sum);
    }
}
